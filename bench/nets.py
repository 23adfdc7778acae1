"""The models that bench/conv.py and bench/compile_time.py measure, written three times: with
mscc's MindSpore-style layers (nn.Conv2d, nn.BatchNorm2d, nn.Dense, ...), with torch.nn, and
as plain jax functions. Each model's parameters come from one numpy dict (torch's layouts:
conv OIHW, dense (out, in)), so the three compute the same numbers from the same weights and
a benchmark can check one against another before it times them.

mscc is imported inside the mscc builders (compile_time.py times `import mscc` itself), torch
and jax inside theirs: a missing peer only skips its column.
"""
from __future__ import annotations

import numpy as np

LR, MOMENTUM = 0.01, 0.9  # MindSpore's LeNet5 recipe: nn.Momentum(lr=0.01, momentum=0.9)


# ------------------------------------------------------------------ shapes and parameters

def _he(rng, *shape):
    fan_in = int(np.prod(shape[1:]))
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def _bias(rng, n):
    return (rng.standard_normal(n) * 0.05).astype(np.float32)


def lenet_params(rng):
    """MindSpore model zoo LeNet5: convs without bias, Dense 400-120-84-10."""
    return {"conv1": _he(rng, 6, 1, 5, 5), "conv2": _he(rng, 16, 6, 5, 5),
            "fc1.w": _he(rng, 120, 400), "fc1.b": _bias(rng, 120),
            "fc2.w": _he(rng, 84, 120), "fc2.b": _bias(rng, 84),
            "fc3.w": _he(rng, 10, 84), "fc3.b": _bias(rng, 10)}


def block_params(rng, channels):
    """ResNet basic block: two 3x3 convs without bias (BatchNorm's beta is the bias)."""
    return {"conv1": _he(rng, channels, channels, 3, 3),
            "conv2": _he(rng, channels, channels, 3, 3)}


def inverted_residual_params(rng, channels, expand=6):
    """MobileNetV2's inverted residual block: a 1x1 expansion, a 3x3 depthwise conv and a
    1x1 projection, without bias (each BatchNorm's beta is the bias)."""
    wide = channels * expand
    return {"expand": _he(rng, wide, channels, 1, 1), "depthwise": _he(rng, wide, 1, 3, 3),
            "project": _he(rng, channels, wide, 1, 1)}


# MobileNetV2 (width 1.0): (expansion t, output channels c, blocks n, first stride s) per
# stage, as MindSpore's model zoo and torchvision build it.
MOBILENET_V2_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def mobilenet_v2_blocks():
    """(name, input channels, output channels, expansion, stride) of each inverted residual."""
    blocks, c_in = [], 32
    for t, c, n, s in MOBILENET_V2_STAGES:
        for i in range(n):
            blocks.append((f"b{len(blocks)}", c_in, c, t, s if i == 0 else 1))
            c_in = c
    return blocks


def mobilenet_v2_params(rng, classes=10):
    """Convolutions without bias (each BatchNorm's beta is the bias), a Dense head."""
    p = {"stem": _he(rng, 32, 3, 3, 3)}
    for name, c_in, c, t, _ in mobilenet_v2_blocks():
        if t != 1:
            p[f"{name}.expand"] = _he(rng, c_in * t, c_in, 1, 1)
        p[f"{name}.dw"] = _he(rng, c_in * t, 1, 3, 3)
        p[f"{name}.project"] = _he(rng, c, c_in * t, 1, 1)
    p["head"] = _he(rng, 1280, 320, 1, 1)
    p["fc.w"], p["fc.b"] = _he(rng, classes, 1280), _bias(rng, classes)
    return p


def mlp_params(rng, sizes=(784, 512, 10)):
    return {"fc1.w": _he(rng, sizes[1], sizes[0]), "fc1.b": _bias(rng, sizes[1]),
            "fc2.w": _he(rng, sizes[2], sizes[1]), "fc2.b": _bias(rng, sizes[2])}


def vit_params(rng, width=64, mlp=128):
    """A pre-norm ViT encoder layer: q, k, v and output projections, a GELU MLP (LayerNorms
    start at gamma 1, beta 0 in every framework)."""
    p = {}
    for name in ("q", "k", "v", "o"):
        p[f"{name}.w"], p[f"{name}.b"] = _he(rng, width, width), _bias(rng, width)
    p["fc1.w"], p["fc1.b"] = _he(rng, mlp, width), _bias(rng, mlp)
    p["fc2.w"], p["fc2.b"] = _he(rng, width, mlp), _bias(rng, width)
    return p


def classifier_data(rng, shape, classes=10):
    """Inputs and int32 labels for a classification step."""
    return (rng.standard_normal(shape).astype(np.float32),
            rng.integers(0, classes, shape[0]).astype(np.int32))


def regression_data(rng, shape):
    """Inputs and a target of the same shape (blocks without a head train on an MSE loss)."""
    return (rng.standard_normal(shape).astype(np.float32),
            rng.standard_normal(shape).astype(np.float32))


# ------------------------------------------------------------------ mscc (MindSpore API)

def ms_lenet(p):
    from mscc import nn

    class LeNet5(nn.Cell):
        """The model zoo's LeNet5, weights from `p`."""

        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, pad_mode="valid", weight_init=p["conv1"])
            self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid", weight_init=p["conv2"])
            self.fc1 = nn.Dense(400, 120, weight_init=p["fc1.w"], bias_init=p["fc1.b"])
            self.fc2 = nn.Dense(120, 84, weight_init=p["fc2.w"], bias_init=p["fc2.b"])
            self.fc3 = nn.Dense(84, 10, weight_init=p["fc3.w"], bias_init=p["fc3.b"])
            self.relu = nn.ReLU()
            self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
            self.flatten = nn.Flatten()

        def construct(self, x):
            x = self.max_pool2d(self.relu(self.conv1(x)))
            x = self.max_pool2d(self.relu(self.conv2(x)))
            x = self.flatten(x)
            x = self.relu(self.fc1(x))
            x = self.relu(self.fc2(x))
            return self.fc3(x)

    return LeNet5()


def ms_block(p, channels):
    from mscc import nn

    class BasicBlock(nn.Cell):
        """ResNet's basic block (stride 1, identity shortcut)."""

        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, pad_mode="same", weight_init=p["conv1"])
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, pad_mode="same", weight_init=p["conv2"])
            self.bn2 = nn.BatchNorm2d(channels)
            self.relu = nn.ReLU()

        def construct(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + x)

    return BasicBlock()


def ms_inverted_residual(p):
    from mscc import nn
    wide, channels = p["expand"].shape[:2]

    class InvertedResidual(nn.Cell):
        """MobileNetV2's block (stride 1, identity shortcut), as in MindSpore's model zoo."""

        def __init__(self):
            super().__init__()
            self.conv = nn.SequentialCell([
                nn.Conv2d(channels, wide, 1, weight_init=p["expand"]), nn.BatchNorm2d(wide),
                nn.ReLU6(),
                nn.Conv2d(wide, wide, 3, pad_mode="same", group=wide,
                          weight_init=p["depthwise"]),
                nn.BatchNorm2d(wide), nn.ReLU6(),
                nn.Conv2d(wide, channels, 1, weight_init=p["project"]),
                nn.BatchNorm2d(channels)])

        def construct(self, x):
            return x + self.conv(x)

    return InvertedResidual()


def ms_mobilenet_v2(p):
    """MobileNetV2 as MindSpore's model zoo writes it (ConvBNReLU with group, InvertedResidual,
    a mean over the spatial dims, Dense), weights from `p`."""
    from mscc import nn, ops

    def conv_bn(name, c_in, c_out, k, stride=1, group=1, relu6=True):
        layers = [nn.Conv2d(c_in, c_out, k, stride, pad_mode="pad", padding=(k - 1) // 2,
                            group=group, weight_init=p[name]), nn.BatchNorm2d(c_out)]
        return layers + [nn.ReLU6()] if relu6 else layers

    class InvertedResidual(nn.Cell):
        def __init__(self, name, c_in, c, t, stride):
            super().__init__()
            wide = c_in * t
            layers = conv_bn(f"{name}.expand", c_in, wide, 1) if t != 1 else []
            layers += conv_bn(f"{name}.dw", wide, wide, 3, stride, group=wide)
            layers += conv_bn(f"{name}.project", wide, c, 1, relu6=False)
            self.conv = nn.SequentialCell(layers)
            self.residual = stride == 1 and c_in == c

        def construct(self, x):
            return x + self.conv(x) if self.residual else self.conv(x)

    class MobileNetV2(nn.Cell):
        def __init__(self):
            super().__init__()
            layers = conv_bn("stem", 3, 32, 3, 2)
            layers += [InvertedResidual(*b) for b in mobilenet_v2_blocks()]
            self.features = nn.SequentialCell(layers + conv_bn("head", 320, 1280, 1))
            self.mean = ops.ReduceMean(keep_dims=False)
            self.head = nn.Dense(1280, p["fc.w"].shape[0], weight_init=p["fc.w"],
                                 bias_init=p["fc.b"])

        def construct(self, x):
            return self.head(self.mean(self.features(x), (2, 3)))

    return MobileNetV2()


def ms_mlp(p):
    from mscc import nn
    return nn.SequentialCell([
        nn.Dense(784, 512, weight_init=p["fc1.w"], bias_init=p["fc1.b"], activation="relu"),
        nn.Dense(512, 10, weight_init=p["fc2.w"], bias_init=p["fc2.b"])])


def ms_vit(p, heads, width=64, mlp=128):
    from mscc import nn, ops

    def dense(name, n_in, n_out):
        return nn.Dense(n_in, n_out, weight_init=p[f"{name}.w"], bias_init=p[f"{name}.b"])

    class EncoderLayer(nn.Cell):
        """x + attention(LayerNorm(x)), then + MLP(LayerNorm(.)), heads as a batch."""

        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm((width,), epsilon=1e-5)
            self.ln2 = nn.LayerNorm((width,), epsilon=1e-5)
            self.q, self.k = dense("q", width, width), dense("k", width, width)
            self.v, self.o = dense("v", width, width), dense("o", width, width)
            self.fc1, self.fc2 = dense("fc1", width, mlp), dense("fc2", mlp, width)
            self.gelu = nn.GELU()  # MindSpore's default: the tanh form
            self.scale = float((width // heads) ** -0.5)

        def split(self, y):  # (b, t, w) -> (b * heads, t, w / heads)
            b, t, _ = y.shape
            y = ops.transpose(ops.reshape(y, (b, t, heads, width // heads)), (0, 2, 1, 3))
            return ops.reshape(y, (b * heads, t, width // heads))

        def construct(self, x):
            b, t, _ = x.shape
            h = self.ln1(x)
            q, k, v = self.split(self.q(h)), self.split(self.k(h)), self.split(self.v(h))
            att = ops.softmax(ops.batch_matmul(q, k, transpose_b=True) * self.scale, -1)
            a = ops.reshape(ops.batch_matmul(att, v), (b, heads, t, width // heads))
            x = x + self.o(ops.reshape(ops.transpose(a, (0, 2, 1, 3)), (b, t, width)))
            return x + self.fc2(self.gelu(self.fc1(self.ln2(x))))

    return EncoderLayer()


def ms_loss(kind):
    from mscc import nn
    if kind == "ce":
        return nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return nn.MSELoss()


def ms_train_step(net, loss_fn):
    """The MindSpore 2.x step (examples/train_digits.py): value_and_grad over the optimizer's
    parameters, then nn.Momentum. Not jitted: graph-mode callers wrap it in ms.jit."""
    import mscc as ms
    from mscc import nn
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=LR, momentum=MOMENTUM)

    def forward_fn(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters)

    def train_step(x, y):
        loss, grads = grad_fn(x, y)
        optimizer(grads)
        return loss

    net.set_train()
    return train_step


# ------------------------------------------------------------------ torch (eager)

def torch_lenet(p):
    import torch
    from torch import nn
    net = nn.Sequential(nn.Conv2d(1, 6, 5, bias=False), nn.ReLU(), nn.MaxPool2d(2, 2),
                        nn.Conv2d(6, 16, 5, bias=False), nn.ReLU(), nn.MaxPool2d(2, 2),
                        nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84),
                        nn.ReLU(), nn.Linear(84, 10))
    _load(torch, [net[0].weight, net[3].weight, net[7].weight, net[7].bias, net[9].weight,
                  net[9].bias, net[11].weight, net[11].bias], p.values())
    return net


def torch_block(p, channels):
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(out)) + x)

    net = BasicBlock()
    _load(torch, [net.conv1.weight, net.conv2.weight], p.values())
    return net


def torch_inverted_residual(p):
    import torch
    from torch import nn
    wide, channels = p["expand"].shape[:2]
    conv = nn.Sequential(
        nn.Conv2d(channels, wide, 1, bias=False), nn.BatchNorm2d(wide), nn.ReLU6(),
        nn.Conv2d(wide, wide, 3, padding=1, groups=wide, bias=False), nn.BatchNorm2d(wide),
        nn.ReLU6(), nn.Conv2d(wide, channels, 1, bias=False), nn.BatchNorm2d(channels))
    _load(torch, [conv[0].weight, conv[3].weight, conv[6].weight], p.values())

    class InvertedResidual(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = conv

        def forward(self, x):
            return x + self.conv(x)
    return InvertedResidual()


def torch_mobilenet_v2(p):
    import torch
    from torch import nn

    def conv_bn(name, c_in, c_out, k, stride=1, groups=1, relu6=True):
        conv = nn.Conv2d(c_in, c_out, k, stride, (k - 1) // 2, groups=groups, bias=False)
        _load(torch, [conv.weight], [p[name]])
        return [conv, nn.BatchNorm2d(c_out)] + ([nn.ReLU6()] if relu6 else [])

    class InvertedResidual(nn.Module):
        def __init__(self, name, c_in, c, t, stride):
            super().__init__()
            wide = c_in * t
            layers = conv_bn(f"{name}.expand", c_in, wide, 1) if t != 1 else []
            layers += conv_bn(f"{name}.dw", wide, wide, 3, stride, groups=wide)
            layers += conv_bn(f"{name}.project", wide, c, 1, relu6=False)
            self.conv = nn.Sequential(*layers)
            self.residual = stride == 1 and c_in == c

        def forward(self, x):
            return x + self.conv(x) if self.residual else self.conv(x)

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            layers = conv_bn("stem", 3, 32, 3, 2)
            layers += [InvertedResidual(*b) for b in mobilenet_v2_blocks()]
            self.features = nn.Sequential(*layers, *conv_bn("head", 320, 1280, 1))
            self.head = nn.Linear(1280, p["fc.w"].shape[0])
            _load(torch, [self.head.weight, self.head.bias], [p["fc.w"], p["fc.b"]])

        def forward(self, x):
            return self.head(self.features(x).mean((2, 3)))

    return MobileNetV2()


def _load(torch, params, arrays):
    with torch.no_grad():
        for param, array in zip(params, arrays):
            param.copy_(torch.from_numpy(array))


def torch_loss(kind):
    import torch
    if kind == "ce":
        return lambda logits, y: torch.nn.functional.cross_entropy(logits, y.long())
    return torch.nn.functional.mse_loss


def torch_train_step(net, loss_fn):
    """zero_grad, forward, loss, backward, SGD with momentum (MindSpore's Momentum update)."""
    import torch
    optimizer = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)

    def train_step(x, y):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), y)
        loss.backward()
        optimizer.step()
        return loss

    net.train()
    return train_step


# ------------------------------------------------------------------ jax (plain functions)

def jax_conv(x, w, padding):
    from jax import lax
    return lax.conv_general_dilated(x, w, (1, 1), padding,
                                    dimension_numbers=("NCHW", "OIHW", "NCHW"))


def _jax_pool(x):
    import jax.numpy as jnp
    from jax import lax
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def _jax_dense(p, name, x):
    return x @ p[f"{name}.w"].T + p[f"{name}.b"]


def jax_lenet(p, x):
    import jax
    relu = jax.nn.relu
    x = _jax_pool(relu(jax_conv(x, p["conv1"], "VALID")))
    x = _jax_pool(relu(jax_conv(x, p["conv2"], "VALID")))
    x = x.reshape(x.shape[0], -1)
    x = relu(_jax_dense(p, "fc1", x))
    return _jax_dense(p, "fc3", relu(_jax_dense(p, "fc2", x)))


def _jax_batch_norm(x, eps=1e-5):
    """Training mode, gamma 1 and beta 0 (the moving statistics are not kept)."""
    import jax.numpy as jnp
    mean = x.mean((0, 2, 3), keepdims=True)
    var = ((x - mean) ** 2).mean((0, 2, 3), keepdims=True)
    return (x - mean) * (1 / jnp.sqrt(var + eps))


def jax_block(p, x):
    import jax
    out = jax.nn.relu(_jax_batch_norm(jax_conv(x, p["conv1"], "SAME")))
    return jax.nn.relu(_jax_batch_norm(jax_conv(out, p["conv2"], "SAME")) + x)


def jax_mobilenet_v2(p, x):
    import jax.numpy as jnp
    from jax import lax

    def conv_bn(name, x, stride=1, groups=1, relu6=True):
        k = p[name].shape[-1]
        y = lax.conv_general_dilated(x, p[name], (stride, stride), [((k - 1) // 2,) * 2] * 2,
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"),
                                     feature_group_count=groups)
        y = _jax_batch_norm(y)
        return jnp.clip(y, 0, 6) if relu6 else y
    x = conv_bn("stem", x, 2)
    for name, c_in, c, t, stride in mobilenet_v2_blocks():
        y = conv_bn(f"{name}.expand", x) if t != 1 else x
        y = conv_bn(f"{name}.dw", y, stride, groups=c_in * t)
        y = conv_bn(f"{name}.project", y, relu6=False)
        x = x + y if stride == 1 and c_in == c else y
    x = conv_bn("head", x).mean((2, 3))
    return _jax_dense(p, "fc", x)


def jax_mlp(p, x):
    import jax
    return _jax_dense(p, "fc2", jax.nn.relu(_jax_dense(p, "fc1", x)))


def _jax_layer_norm(x, eps=1e-5):
    import jax.numpy as jnp
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)


def jax_vit(p, x, heads):
    import jax
    import jax.numpy as jnp
    b, t, w = x.shape

    def split(y):
        return y.reshape(b, t, heads, w // heads).transpose(0, 2, 1, 3)

    h = _jax_layer_norm(x)
    q, k, v = (split(_jax_dense(p, n, h)) for n in ("q", "k", "v"))
    att = jax.nn.softmax(jnp.einsum("bhtd,bhsd->bhts", q, k) * (w // heads) ** -0.5, -1)
    a = jnp.einsum("bhts,bhsd->bhtd", att, v).transpose(0, 2, 1, 3).reshape(b, t, w)
    x = x + _jax_dense(p, "o", a)
    mlp = jax.nn.gelu(_jax_dense(p, "fc1", _jax_layer_norm(x)), approximate=True)
    return x + _jax_dense(p, "fc2", mlp)


def jax_loss(kind):
    import jax
    import jax.numpy as jnp
    if kind == "ce":
        def cross_entropy(logits, y):
            logp = jax.nn.log_softmax(logits, -1)
            return -jnp.take_along_axis(logp, y[:, None], 1).mean()
        return cross_entropy
    return lambda out, y: ((out - y) ** 2).mean()


def jax_train_step(apply, loss_fn):
    """(params, moments, x, y) -> (loss, params, moments): value_and_grad, then the
    momentum update v = 0.9 v + g, p -= lr v (MindSpore's Momentum)."""
    import jax

    def loss_of(params, x, y):
        return loss_fn(apply(params, x), y)

    def train_step(params, moments, x, y):
        loss, grads = jax.value_and_grad(loss_of)(params, x, y)
        moments = jax.tree_util.tree_map(lambda v, g: MOMENTUM * v + g, moments, grads)
        params = jax.tree_util.tree_map(lambda w, v: w - LR * v, params, moments)
        return loss, params, moments

    return train_step


# ------------------------------------------------------------------ a single convolution

def conv_params(rng, c_in=16, c_out=32, k=3):
    return {"w": _he(rng, c_out, c_in, k, k), "b": _bias(rng, c_out)}


def ms_conv(p):
    from mscc import nn
    c_out, c_in, k, _ = p["w"].shape
    return nn.Conv2d(c_in, c_out, k, pad_mode="same", has_bias=True, weight_init=p["w"],
                     bias_init=p["b"])


def torch_conv(p):
    import torch
    c_out, c_in, k, _ = p["w"].shape
    conv = torch.nn.Conv2d(c_in, c_out, k, padding="same")
    _load(torch, [conv.weight, conv.bias], [p["w"], p["b"]])
    return conv


def ms_grouped(p):
    """A grouped 3x3 Conv2d with bias, C -> C channels (groups = C / the weight's second
    dim: depthwise for 1)."""
    from mscc import nn
    c, per_group = p["w"].shape[:2]
    return nn.Conv2d(c, c, 3, pad_mode="same", group=c // per_group, has_bias=True,
                     weight_init=p["w"], bias_init=p["b"])


def torch_grouped(p):
    import torch
    c, per_group = p["w"].shape[:2]
    conv = torch.nn.Conv2d(c, c, 3, padding="same", groups=c // per_group)
    _load(torch, [conv.weight, conv.bias], [p["w"], p["b"]])
    return conv
