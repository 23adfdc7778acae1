"""ms.nn: Cells, layers, losses, optimizers, learning-rate schedules and training wrappers."""
from . import init
from .activation import (ELU, HSigmoid, HSwish, Identity, LeakyReLU, LogSoftmax, Mish, PReLU,
                         ReLU6, SiLU, Dropout2d)
from .cell import Cell, CellDict, CellList, SequentialCell
from .conv import (Conv1d, Conv1dTranspose, Conv2d, Conv2dTranspose, Conv3d,
                   Conv3dTranspose)
from .dynamic_lr import (cosine_decay_lr, exponential_decay_lr, inverse_decay_lr,
                         natural_exp_decay_lr, piecewise_constant_lr, polynomial_decay_lr,
                         warmup_lr)
from .init import initializer, set_seed
from .learning_rate_schedule import (CosineDecayLR, ExponentialDecayLR, InverseDecayLR,
                                     LearningRateSchedule, NaturalExpDecayLR, PolynomialDecayLR,
                                     WarmUpLR)
from .layers import (GELU, BatchNorm1d, BatchNorm2d, Dense, Dropout, Embedding, Flatten,
                     LayerNorm, ReLU, Sigmoid, Softmax, Tanh)
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, CTCLoss, HuberLoss, KLDivLoss,
                   L1Loss, LossBase, MSELoss, NLLLoss, SmoothL1Loss,
                   SoftmaxCrossEntropyWithLogits)
from .optim import (SGD, Adagrad, Adam, AdamWeightDecay, Lamb, Momentum, Optimizer, RMSProp)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d,
                      AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d, AvgPool1d,
                      AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d)
from .wrap import (ClipByNorm, TrainOneStepCell, WithEvalCell, WithLossCell,
                   clip_by_global_norm)

__all__ = ["Cell", "SequentialCell", "CellList", "CellDict", "Dense", "ReLU", "ReLU6", "GELU",
           "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "LeakyReLU", "ELU", "SiLU", "Mish",
           "HSwish", "HSigmoid", "PReLU", "Identity", "BatchNorm1d", "BatchNorm2d", "Dropout",
           "Dropout2d", "Embedding", "Conv1d", "Conv2d", "Conv3d", "Conv1dTranspose",
           "Conv2dTranspose", "Conv3dTranspose", "MaxPool1d", "MaxPool2d", "MaxPool3d",
           "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
           "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
           "LayerNorm", "Flatten", "RNN", "GRU", "LSTM", "RNNCell", "GRUCell", "LSTMCell",
           "LossBase", "SoftmaxCrossEntropyWithLogits", "MSELoss", "L1Loss", "SmoothL1Loss",
           "HuberLoss", "BCELoss", "BCEWithLogitsLoss", "NLLLoss", "CrossEntropyLoss",
           "CTCLoss",
           "KLDivLoss", "Optimizer", "SGD", "Momentum", "Adam", "AdamWeightDecay", "Lamb",
           "Adagrad", "RMSProp", "piecewise_constant_lr", "exponential_decay_lr",
           "natural_exp_decay_lr", "inverse_decay_lr", "cosine_decay_lr",
           "polynomial_decay_lr", "warmup_lr", "LearningRateSchedule", "ExponentialDecayLR",
           "NaturalExpDecayLR", "InverseDecayLR", "CosineDecayLR", "PolynomialDecayLR",
           "WarmUpLR", "WithLossCell", "WithEvalCell",
           "TrainOneStepCell", "ClipByNorm", "clip_by_global_norm", "initializer", "set_seed",
           "init"]
