"""mscc passes and the one pipeline that orders them (passes.pipeline)."""
