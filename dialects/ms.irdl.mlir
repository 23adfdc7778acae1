// The ms dialect: structure of every op (operands, results, required attributes, regions).
// IRDL cannot say which element types or attribute values are valid, which attributes are
// optional, or how shapes relate; the Python op registry in dialects/ops/ checks that.
// Constant inputs (shape, axis, perm, ...) are optional operands: present before
// ms-const-input-to-attr, replaced by an attribute of the same name after it.
irdl.dialect @ms {
  irdl.operation @add {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @sub {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @mul {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @div {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @pow {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @maximum {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @minimum {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @equal {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @not_equal {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @less {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @less_equal {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @greater {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @greater_equal {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @logical_and {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @logical_or {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @neg {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @exp {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @log {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @tanh {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @erf {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @sigmoid {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @relu {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @sqrt {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @rsqrt {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @abs {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @logical_not {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @zeros_like {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @ones_like {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @random_uniform {
    %counter = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %shape_attr = irdl.base "#builtin.dense_array"
    %seed_attr = irdl.base "#builtin.integer"
    irdl.operands(counter: %counter)
    irdl.results(output: %output)
    irdl.attributes {"shape" = %shape_attr, "seed" = %seed_attr}
  }
  irdl.operation @stop_gradient {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x)
    irdl.results(output: %output)
  }
  irdl.operation @select {
    %cond = irdl.base "!builtin.tensor"
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(cond: %cond, x: %x, y: %y)
    irdl.results(output: %output)
  }
  irdl.operation @cast {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %dtype_attr = irdl.base "#builtin.type"
    irdl.operands(x: %x)
    irdl.results(output: %output)
    irdl.attributes {"dtype" = %dtype_attr}
  }
  irdl.operation @constant {
    %output = irdl.base "!builtin.tensor"
    %value_attr = irdl.base "#builtin.dense_int_or_fp_elements"
    irdl.results(output: %output)
    irdl.attributes {"value" = %value_attr}
  }
  irdl.operation @matmul {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %transpose_a_attr = irdl.base "#builtin.integer"
    %transpose_b_attr = irdl.base "#builtin.integer"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
    irdl.attributes {"transpose_a" = %transpose_a_attr, "transpose_b" = %transpose_b_attr}
  }
  irdl.operation @batch_matmul {
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %transpose_a_attr = irdl.base "#builtin.integer"
    %transpose_b_attr = irdl.base "#builtin.integer"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
    irdl.attributes {"transpose_a" = %transpose_a_attr, "transpose_b" = %transpose_b_attr}
  }
  irdl.operation @reduce_sum {
    %x = irdl.base "!builtin.tensor"
    %axis = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %keep_dims_attr = irdl.base "#builtin.integer"
    irdl.operands(x: %x, axis: optional %axis)
    irdl.results(output: %output)
    irdl.attributes {"keep_dims" = %keep_dims_attr}
  }
  irdl.operation @reduce_mean {
    %x = irdl.base "!builtin.tensor"
    %axis = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %keep_dims_attr = irdl.base "#builtin.integer"
    irdl.operands(x: %x, axis: optional %axis)
    irdl.results(output: %output)
    irdl.attributes {"keep_dims" = %keep_dims_attr}
  }
  irdl.operation @reduce_max {
    %x = irdl.base "!builtin.tensor"
    %axis = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %keep_dims_attr = irdl.base "#builtin.integer"
    irdl.operands(x: %x, axis: optional %axis)
    irdl.results(output: %output)
    irdl.attributes {"keep_dims" = %keep_dims_attr}
  }
  irdl.operation @argmax {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %axis_attr = irdl.base "#builtin.integer"
    %keep_dims_attr = irdl.base "#builtin.integer"
    irdl.operands(x: %x)
    irdl.results(output: %output)
    irdl.attributes {"axis" = %axis_attr, "keep_dims" = %keep_dims_attr}
  }
  irdl.operation @argmin {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %axis_attr = irdl.base "#builtin.integer"
    %keep_dims_attr = irdl.base "#builtin.integer"
    irdl.operands(x: %x)
    irdl.results(output: %output)
    irdl.attributes {"axis" = %axis_attr, "keep_dims" = %keep_dims_attr}
  }
  irdl.operation @reduce_min {
    %x = irdl.base "!builtin.tensor"
    %axis = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %keep_dims_attr = irdl.base "#builtin.integer"
    irdl.operands(x: %x, axis: optional %axis)
    irdl.results(output: %output)
    irdl.attributes {"keep_dims" = %keep_dims_attr}
  }
  irdl.operation @reshape {
    %x = irdl.base "!builtin.tensor"
    %shape = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, shape: optional %shape)
    irdl.results(output: %output)
  }
  irdl.operation @transpose {
    %x = irdl.base "!builtin.tensor"
    %perm = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, perm: optional %perm)
    irdl.results(output: %output)
  }
  irdl.operation @broadcast_to {
    %x = irdl.base "!builtin.tensor"
    %shape = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, shape: optional %shape)
    irdl.results(output: %output)
  }
  irdl.operation @expand_dims {
    %x = irdl.base "!builtin.tensor"
    %axis = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, axis: optional %axis)
    irdl.results(output: %output)
  }
  irdl.operation @squeeze {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %axis_attr = irdl.base "#builtin.dense_array"
    irdl.operands(x: %x)
    irdl.results(output: %output)
    irdl.attributes {"axis" = %axis_attr}
  }
  irdl.operation @concat {
    // Binary: IRDL unifies the types of a variadic operand group, so an N-ary concat with
    // differently shaped inputs cannot be expressed. The frontend chains concats instead.
    %x = irdl.base "!builtin.tensor"
    %y = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %axis_attr = irdl.base "#builtin.integer"
    irdl.operands(x: %x, y: %y)
    irdl.results(output: %output)
    irdl.attributes {"axis" = %axis_attr}
  }
  irdl.operation @softmax {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %axis_attr = irdl.base "#builtin.integer"
    irdl.operands(x: %x)
    irdl.results(output: %output)
    irdl.attributes {"axis" = %axis_attr}
  }
  irdl.operation @log_softmax {
    %x = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %axis_attr = irdl.base "#builtin.integer"
    irdl.operands(x: %x)
    irdl.results(output: %output)
    irdl.attributes {"axis" = %axis_attr}
  }
  irdl.operation @one_hot {
    %indices = irdl.base "!builtin.tensor"
    %depth = irdl.base "!builtin.tensor"
    %on_value = irdl.base "!builtin.tensor"
    %off_value = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %axis_attr = irdl.base "#builtin.integer"
    irdl.operands(indices: %indices, depth: optional %depth, on_value: %on_value, off_value: %off_value)
    irdl.results(output: %output)
    irdl.attributes {"axis" = %axis_attr}
  }
  irdl.operation @tile {
    %x = irdl.base "!builtin.tensor"
    %multiples = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, multiples: optional %multiples)
    irdl.results(output: %output)
  }
  irdl.operation @slice {
    %x = irdl.base "!builtin.tensor"
    %begin = irdl.base "!builtin.tensor"
    %size = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, begin: optional %begin, size: optional %size)
    irdl.results(output: %output)
  }
  irdl.operation @strided_slice {
    %x = irdl.base "!builtin.tensor"
    %begin = irdl.base "!builtin.tensor"
    %end = irdl.base "!builtin.tensor"
    %strides = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(x: %x, begin: optional %begin, end: optional %end, strides: optional %strides)
    irdl.results(output: %output)
  }
  irdl.operation @strided_slice_grad {
    // The gradient of slice/strided_slice: zeros of `shape` with dy scattered where
    // strided_slice would read. Emitted by ms-autodiff, so its arguments are attributes only.
    %dy = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %shape_attr = irdl.base "#builtin.dense_array"
    %begin_attr = irdl.base "#builtin.dense_array"
    %end_attr = irdl.base "#builtin.dense_array"
    %strides_attr = irdl.base "#builtin.dense_array"
    irdl.operands(dy: %dy)
    irdl.results(output: %output)
    irdl.attributes {"shape" = %shape_attr, "begin" = %begin_attr, "end" = %end_attr, "strides" = %strides_attr}
  }
  irdl.operation @gather {
    %params = irdl.base "!builtin.tensor"
    %indices = irdl.base "!builtin.tensor"
    %axis = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(params: %params, indices: %indices, axis: optional %axis)
    irdl.results(output: %output)
  }
  irdl.operation @unsorted_segment_sum {
    %data = irdl.base "!builtin.tensor"
    %segment_ids = irdl.base "!builtin.tensor"
    %num_segments = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(data: %data, segment_ids: %segment_ids, num_segments: optional %num_segments)
    irdl.results(output: %output)
  }
  irdl.operation @assign {
    %variable = irdl.base "!builtin.tensor"
    %value = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    irdl.operands(variable: %variable, value: %value)
    irdl.results(output: %output)
  }
  irdl.operation @grad {
    // A higher-order op, like MindSpore's GradOperation()(fn): its result is the gradient
    // function of @callee, called with func.call_indirect. ms-autodiff generates that function
    // and replaces this op with a func.constant referring to it.
    %gradfn = irdl.base "!builtin.function"
    %callee_attr = irdl.base "#builtin.symbol_ref"
    %grad_position_attr = irdl.base "#builtin.dense_array"
    %get_by_list_attr = irdl.base "#builtin.integer"
    %sens_param_attr = irdl.base "#builtin.integer"
    %with_value_attr = irdl.base "#builtin.integer"
    irdl.results(gradfn: %gradfn)
    irdl.attributes {"callee" = %callee_attr, "grad_position" = %grad_position_attr, "get_by_list" = %get_by_list_attr, "sens_param" = %sens_param_attr, "with_value" = %with_value_attr}
  }
  irdl.operation @fused {
    // A group of ops that becomes one loop nest (CPU) or one kernel (GPU). The region reads
    // values defined above it (IRDL variadics cannot hold differently typed operands) and
    // ends in gpu.yield (IRDL ops cannot be terminators).
    %output = irdl.base "!builtin.tensor"
    %kind_attr = irdl.base "#builtin.string"
    %body = irdl.region with size 1
    irdl.results(output: %output)
    irdl.attributes {"kind" = %kind_attr}
    irdl.regions(body: %body)
  }
}
