"""What runs inside each rank: wrap the model with the chosen methods, find the micro-batch, time the step.

``worker.py`` is the entry point that ``launch`` starts (itself on one GPU, under torchrun on several); ``apply.py`` holds one function
per technique, applied in one readable order; ``stepper.py`` runs the accumulating, boundary and optimizer phases
for each parallel backend; ``timing.py`` times them with the GPU synchronized (or not, to reproduce the
paper's method).
"""
