"""Learning-rate schedulers with torch's names, formulas, warnings and
state dicts. Each sets the "lr" of its optimizer's parameter groups when
made (its step 0) and at each step(); get_last_lr() gives the lrs it set
last. step() uses the chainable form (each lr from the group's current
one); step(epoch) takes the closed form where torch has one."""
from ._lr_base import LRScheduler, _LRScheduler
from ._lr_simple import (ConstantLR, CosineAnnealingLR,
                         CosineAnnealingWarmRestarts, ExponentialLR,
                         LambdaLR, LinearLR, MultiplicativeLR, MultiStepLR,
                         PolynomialLR, StepLR)
from ._lr_cyclic import CyclicLR, OneCycleLR
from ._lr_compose import ChainedScheduler, ReduceLROnPlateau, SequentialLR

__all__ = ["LRScheduler", "_LRScheduler", "StepLR", "MultiStepLR",
           "ExponentialLR", "PolynomialLR", "CosineAnnealingLR",
           "CosineAnnealingWarmRestarts", "LambdaLR", "MultiplicativeLR",
           "LinearLR", "ConstantLR", "OneCycleLR", "CyclicLR",
           "ReduceLROnPlateau", "SequentialLR", "ChainedScheduler"]
