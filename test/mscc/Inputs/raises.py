import mscc as ms

value = undefined_name + 1
