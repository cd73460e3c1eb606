"""TrainGuard diagnosis package."""
