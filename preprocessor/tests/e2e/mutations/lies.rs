//! The single-field lies told in the seed's contracts: each replaces one text of one contract,
//! and each must fail the gate with its own code.

/// (kernel, what to replace, which occurrence, replacement, expected code).
pub(super) const LIES: &[(&str, &str, usize, &str, &str)] = &[
    // dtype lists, per input
    (
        "conv2d",
        "dtypes: [F32, F64]",
        0,
        "dtypes: [F32]",
        "FKC0406",
    ),
    (
        "conv2d",
        "dtypes: [F32, F64]",
        1,
        "dtypes: [F32, F64, BF16]",
        "FKC0304",
    ),
    (
        "max_pool2d",
        "dtypes: [F32, F64, BF16, F16]",
        0,
        "dtypes: [F32, F64, BF16]",
        "FKC0406",
    ),
    // optional
    ("conv2d", "optional: true", 0, "optional: false", "FKC0408"),
    // rank
    (
        "conv2d",
        "rank: 4 # [N, Cin, H, W]",
        0,
        "rank: 3",
        "FKC0408",
    ),
    // each layout flag
    (
        "conv2d",
        "strided: rejected",
        0,
        "strided: accepted",
        "FKC0410",
    ),
    (
        "conv2d",
        "broadcast_stride0: rejected",
        0,
        "broadcast_stride0: accepted",
        "FKC0410",
    ),
    (
        "conv2d",
        "start_offset: rejected",
        0,
        "start_offset: accepted",
        "FKC0410",
    ),
    (
        "conv2d",
        "reverse_strides: rejected",
        0,
        "reverse_strides: accepted",
        "FKC0410",
    ),
    // constraints tightened (a part the kernel does not need) and loosened (a part removed)
    (
        "conv2d",
        "weight.dim[0] % groups == 0\"",
        0,
        "weight.dim[0] % groups == 0 && x.dim[2] > 1\"",
        "FKC0402",
    ),
    (
        "conv2d",
        "shape_constraint: \"weight.dim[1] * groups == x.dim[1] && prod(weight.dim) > 0\"",
        0,
        "shape_constraint: \"weight.dim[1] >= 1 && prod(weight.dim) > 0\"",
        "FKC0401",
    ),
    (
        "conv_transpose2d",
        "\"stride[0] > 0 && stride[1] > 0\"",
        0,
        "\"stride[0] > 0\"",
        "FKC0401",
    ),
    (
        "max_pool2d",
        "\"kernel_size > 0 &&",
        0,
        "\"kernel_size > 1 &&",
        "FKC0402",
    ),
    // shape and dtype rules
    (
        "max_pool2d",
        "Hout=(x.dim[2]-kernel_size)/stride+1",
        0,
        "Hout=(x.dim[2]-kernel_size)/stride+2",
        "FKC0403",
    ),
    (
        "conv2d",
        "shape_rule: conv2d(params)",
        0,
        "shape_rule: conv_transpose2d(params)",
        "FKC0207",
    ),
    (
        "max_pool2d",
        "dtype_rule: passthrough(x)",
        0,
        "dtype_rule: passthrough(y)",
        "FKC0202",
    ),
    // cost
    ("conv2d", "flops: \"2 *", 0, "flops: \"4 *", "FKC0407"),
    (
        "conv2d",
        "bytes_moved: \"(",
        0,
        "bytes_moved: \"0 - (",
        "FKC0407",
    ),
    (
        "conv2d",
        "host_bytes: \"out_shape[0]",
        0,
        "host_bytes: \"2 * out_shape[0]",
        "FKC0407",
    ),
    // carrier, variant, fields, kinds, entry point
    ("conv2d", "op_kind: Conv2D", 0, "op_kind: Conv2d", "FKC0301"),
    (
        "conv2d",
        "variant: Conv2D",
        0,
        "variant: ConvTranspose2D",
        "FKC0309",
    ),
    (
        "conv2d",
        "groups: { kind: usize",
        0,
        "groups: { kind: \"(usize, usize)\"",
        "FKC0303",
    ),
    (
        "conv2d",
        "dilation: { kind",
        0,
        "dilations: { kind",
        "FKC0303",
    ),
    ("conv2d", "ops::conv2d_f32", 0, "ops::conv2d_f23", "FKC0304"),
    // an `||` alternative the kernel does not accept alone (found by satisfying each
    // alternative alone; a random draw meets `stride[0] == 0 && dilation[0] == 4` rarely)
    (
        "conv_transpose2d",
        "\"stride[0] > 0 && stride[1] > 0\"",
        0,
        "\"(stride[0] > 0 || dilation[0] == 4) && stride[1] > 0\"",
        "FKC0401",
    ),
    // in_place, precision
    ("conv2d", "in_place: false", 0, "in_place: true", "FKC0415"),
    ("conv2d", "max_ulp: ~", 0, "max_ulp: 0", "FKC0409"),
    // bytes_moved that forgets an operand or counts one twice, reduction flops short a factor
    (
        "conv2d",
        " + w_shape[0]*w_shape[1]*w_shape[2]*w_shape[3]",
        0,
        "",
        "FKC0407",
    ),
    (
        "conv2d",
        "bytes_moved: \"(x_shape[0]*x_shape[1]*x_shape[2]*x_shape[3]",
        0,
        "bytes_moved: \"(2*x_shape[0]*x_shape[1]*x_shape[2]*x_shape[3]",
        "FKC0407",
    ),
    (
        "max_pool2d",
        "* kernel_size * kernel_size\"",
        0,
        "* kernel_size\"",
        "FKC0407",
    ),
    // a precision the long sums do not keep (a few ulps lost to cancellation)
    ("conv2d_simple", "max_ulp: ~", 0, "max_ulp: 2", "FKC0409"),
    // NaN bits: a payload promised where the kernel makes every NaN canonical, and back
    (
        "conv2d",
        "nan_bits: canonical",
        0,
        "nan_bits: propagate",
        "FKC0409",
    ),
    (
        "max_pool2d",
        "nan_bits: preserve",
        0,
        "nan_bits: canonical",
        "FKC0409",
    ),
    // a NaN claimed kept bit for bit by a kernel that makes every NaN canonical
    (
        "conv2d",
        "nan_bits: canonical",
        0,
        "nan_bits: preserve",
        "FKC0409",
    ),
    // a named path the kernel does not have, a path named for a level the provider lacks
    ("conv2d", "- tile.4ch.2v", 0, "- tile.8ch.2v", "FKC0416"),
    (
        "conv2d",
        "levels: [x86-v4]",
        0,
        "levels: [x86-v9]",
        "FKC0416",
    ),
    // a path claimed at a level the kernel never takes it at (a sixth red-team round's lie)
    (
        "conv2d",
        "levels: [x86-v4]",
        0,
        "levels: [x86-v4, x86-v3]",
        "FKC0416",
    ),
];
