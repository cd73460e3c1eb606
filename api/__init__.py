"""TrainGuard api package."""
