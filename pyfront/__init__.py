"""The Python frontend: Tensor, Parameter, ops, tracing into ms IR, jit (and later grad, nn)."""
