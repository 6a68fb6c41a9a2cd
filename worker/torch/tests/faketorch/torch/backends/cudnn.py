allow_tf32 = False
