"""Looking inside a BERT: parameter tables, tensor shapes, attention maps, embedding plots, training curves.

Each file draws one thing from a real model or a real run folder; the commands in minibert/commands/ are thin
wrappers around them. matplotlib is needed only by the PNG writers and is imported when they run.
"""
