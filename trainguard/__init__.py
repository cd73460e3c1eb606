"""TrainGuard trainguard package."""
