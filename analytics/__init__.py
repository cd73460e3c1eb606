"""TrainGuard analytics package."""
