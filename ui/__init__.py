"""TrainGuard ui package."""
