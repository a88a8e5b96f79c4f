"""Knowledge distillation (DistilBERT, Sanh et al. 2019): a smaller student initialised from a teacher's layers
and trained to match it. See docs/distillation.md."""
