"""Pre-training: the training loop (pretrain.py), evaluation, metrics, checkpoints and run folders."""
