"""TrainGuard actions package."""
