"""tritonrl: train language models to write correct, fast Triton kernels.

The core (``tritonrl.tasks``, ``tritonrl.extract``, ``tritonrl.verify``) needs only torch, triton and numpy;
training and evaluation need the ``train`` extra.
"""

__version__ = "0.1.0"
