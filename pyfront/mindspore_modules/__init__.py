"""MindSpore's module layout: the modules that `mscc.ops.operations`, `mscc.ops.functional`,
`mscc.ops.composite`, `mscc.common`, `mscc.common.{dtype,initializer,api,parameter}` name.

They hold no implementation of their own (re-exports of pyfront/ and a few thin adapters); the
top-level __init__.py registers them under MindSpore's names in one alias table.
"""
