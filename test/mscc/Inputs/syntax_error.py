import mscc as ms

def f(x)
    return x
