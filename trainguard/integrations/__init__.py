"""In-job integrations: import one inside the training script."""
