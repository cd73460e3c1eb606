"""TrainGuard sim package."""
