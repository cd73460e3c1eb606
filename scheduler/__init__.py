"""TrainGuard scheduler package."""
