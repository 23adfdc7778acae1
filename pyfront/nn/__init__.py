"""ms.nn: Cells, layers, losses and optimizers."""
from .cell import Cell, SequentialCell
from .conv import AvgPool2d, Conv2d, MaxPool2d
from .init import initializer, set_seed
from .layers import (GELU, BatchNorm1d, BatchNorm2d, Dense, Dropout, Flatten, LayerNorm, ReLU,
                     Sigmoid, Softmax, Tanh)
from .loss import MSELoss, SoftmaxCrossEntropyWithLogits
from .optim import SGD, Adam, Momentum, Optimizer

__all__ = ["Cell", "SequentialCell", "Dense", "ReLU", "GELU", "Tanh", "Sigmoid", "Softmax",
           "BatchNorm1d", "BatchNorm2d", "Dropout", "Conv2d", "MaxPool2d", "AvgPool2d",
           "LayerNorm", "Flatten", "SoftmaxCrossEntropyWithLogits", "MSELoss", "Optimizer",
           "SGD", "Momentum", "Adam", "initializer", "set_seed"]
