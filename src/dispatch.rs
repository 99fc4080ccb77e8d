//! Dispatch carriers: `OpKind`, `OpParams`, and a machine-readable description of each variant.
//!
//! `OpKind` names an op the executor routes; `OpParams` carries its parameters. The static
//! [`OP_PARAMS_VARIANTS`] table describes every `OpParams` variant — its fields, their kinds
//! (`usize`, `(usize, usize)`, `[usize; 4]`) and which operand's full shape a field carries — so
//! an importer can compare a contract's `op_params` block with the real carrier instead of
//! guessing from field names. [`ParamValues`] is the name → value form used by the link
//! registry and by `OpParams::from_values` / `to_values`; each kernel's operands (`CONV2D_INPUTS`, …) are
//! described here too, for the link registry and the executor alike.

use std::fmt;

use fkc_provider::error::{KernelError, KernelErrorKind};
pub use fkc_provider::registry::{
    FieldDesc, OperandDesc, ParamKind, ParamValue, ParamValues, VariantDesc,
};

/// An op the executor can route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// Direct NCHW 2-D convolution (`ops::conv2d`).
    Conv2D,
    /// Scatter-form NCHW 2-D transposed convolution (`ops::conv_transpose2d`).
    ConvTranspose2D,
    /// Packed row-major copy of any view (`ops::contiguize`), inserted by the planner.
    Contiguize,
}

impl OpKind {
    /// Every op kind.
    pub const ALL: [OpKind; 3] = [OpKind::Conv2D, OpKind::ConvTranspose2D, OpKind::Contiguize];

    /// The carrier spelling: `"Conv2D"`, `"ConvTranspose2D"`, `"Contiguize"`.
    pub const fn name(self) -> &'static str {
        match self {
            OpKind::Conv2D => "Conv2D",
            OpKind::ConvTranspose2D => "ConvTranspose2D",
            OpKind::Contiguize => "Contiguize",
        }
    }

    /// The kernel this op routes to: `"conv2d"`, `"conv_transpose2d"`, `"contiguize"`.
    pub fn kernel_name(self) -> &'static str {
        match self {
            OpKind::Conv2D => "conv2d",
            OpKind::ConvTranspose2D => "conv_transpose2d",
            OpKind::Contiguize => "contiguize",
        }
    }

    /// Parses the carrier spelling (exact).
    pub fn from_name(name: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parameters of an op, one variant per [`OpKind`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OpParams {
    /// See `ops::Conv2dParams` for the semantics of each field.
    Conv2D {
        /// `x` shape `[N, Cin, H, W]`.
        x_shape: [usize; 4],
        /// `weight` shape `[Cout, Cin/groups, Kh, Kw]`.
        w_shape: [usize; 4],
        /// Output shape `[N, Cout, Hout, Wout]`.
        out_shape: [usize; 4],
        /// `(sh, sw)`.
        stride: (usize, usize),
        /// Symmetric zero padding `(ph, pw)`.
        padding: (usize, usize),
        /// `(dh, dw)`.
        dilation: (usize, usize),
        /// Channel groups.
        groups: usize,
    },
    /// See `ops::ConvTranspose2dParams` for the semantics of each field.
    ConvTranspose2D {
        /// `x` shape `[N, Cin, H, W]`.
        x_shape: [usize; 4],
        /// `weight` shape `[Cin, Cout/groups, Kh, Kw]`.
        w_shape: [usize; 4],
        /// Output shape `[N, Cout, Hout, Wout]`.
        out_shape: [usize; 4],
        /// `(sh, sw)`.
        stride: (usize, usize),
        /// `(ph, pw)`, cropped from both sides of the produced output.
        padding: (usize, usize),
        /// `(oph, opw)`, added on the bottom/right.
        output_padding: (usize, usize),
        /// `(dh, dw)`.
        dilation: (usize, usize),
        /// Channel groups.
        groups: usize,
    },
    /// No parameters: the output has the operand's shape.
    Contiguize,
}

const fn field(name: &'static str, kind: ParamKind, doc: &'static str) -> FieldDesc {
    FieldDesc {
        name,
        kind,
        shape_of: None,
        doc,
        values: &[],
    }
}

const fn shape_field(name: &'static str, of: &'static str, doc: &'static str) -> FieldDesc {
    FieldDesc {
        name,
        kind: ParamKind::UsizeArray4,
        shape_of: Some(of),
        doc,
        values: &[],
    }
}

const X_SHAPE: FieldDesc = shape_field("x_shape", "x", "input shape [N, Cin, H, W]");
const OUT_SHAPE: FieldDesc = shape_field("out_shape", "out", "output shape [N, Cout, Hout, Wout]");
const STRIDE: FieldDesc = field("stride", ParamKind::UsizePair, "(sh, sw), each >= 1");
const DILATION: FieldDesc = field("dilation", ParamKind::UsizePair, "(dh, dw), each >= 1");
const GROUPS: FieldDesc = field("groups", ParamKind::Usize, "channel groups, >= 1");

/// Fields of `OpParams::Conv2D`, in declaration order.
pub const CONV2D_FIELDS: &[FieldDesc] = &[
    X_SHAPE,
    shape_field(
        "w_shape",
        "weight",
        "weight shape [Cout, Cin/groups, Kh, Kw]",
    ),
    OUT_SHAPE,
    STRIDE,
    field(
        "padding",
        ParamKind::UsizePair,
        "symmetric zero padding (ph, pw); padded taps are skipped",
    ),
    DILATION,
    GROUPS,
];

/// Fields of `OpParams::ConvTranspose2D`, in declaration order.
pub const CONV_TRANSPOSE2D_FIELDS: &[FieldDesc] = &[
    X_SHAPE,
    shape_field(
        "w_shape",
        "weight",
        "weight shape [Cin, Cout/groups, Kh, Kw]",
    ),
    OUT_SHAPE,
    STRIDE,
    field(
        "padding",
        ParamKind::UsizePair,
        "(ph, pw) cropped from both sides of the produced output",
    ),
    field(
        "output_padding",
        ParamKind::UsizePair,
        "(oph, opw) added at the bottom/right; < stride or < dilation",
    ),
    DILATION,
    GROUPS,
];

/// Every real `OpParams` variant.
pub const OP_PARAMS_VARIANTS: &[VariantDesc] = &[
    VariantDesc {
        variant: "Conv2D",
        op_kind: Some(OpKind::Conv2D.name()),
        fields: CONV2D_FIELDS,
    },
    VariantDesc {
        variant: "ConvTranspose2D",
        op_kind: Some(OpKind::ConvTranspose2D.name()),
        fields: CONV_TRANSPOSE2D_FIELDS,
    },
    VariantDesc {
        variant: "Contiguize",
        op_kind: Some(OpKind::Contiguize.name()),
        fields: &[],
    },
];

/// The description of the `OpParams` variant called `name` (exact spelling).
pub fn variant(name: &str) -> Option<&'static VariantDesc> {
    OP_PARAMS_VARIANTS.iter().find(|v| v.variant == name)
}

impl OpParams {
    /// The variant's name (`"Conv2D"`, ...).
    pub fn variant_name(&self) -> &'static str {
        self.op_kind().name()
    }

    /// The op kind this variant parameterises.
    pub fn op_kind(&self) -> OpKind {
        match self {
            OpParams::Conv2D { .. } => OpKind::Conv2D,
            OpParams::ConvTranspose2D { .. } => OpKind::ConvTranspose2D,
            OpParams::Contiguize => OpKind::Contiguize,
        }
    }

    /// Builds a variant from named values: every field must be present with its kind, and no
    /// other name may appear (`BadParams` otherwise; `UnknownOp` for an unknown variant).
    pub fn from_values(variant_name: &str, values: &ParamValues) -> Result<OpParams, KernelError> {
        let desc = variant(variant_name).ok_or_else(|| {
            KernelError::new(
                "op_params",
                KernelErrorKind::UnknownOp,
                format!("unknown OpParams variant `{variant_name}`"),
            )
        })?;
        let reader = Reader { desc, values };
        reader.reject_unknown()?;
        Ok(match desc.variant {
            "Conv2D" => OpParams::Conv2D {
                x_shape: reader.array4("x_shape")?,
                w_shape: reader.array4("w_shape")?,
                out_shape: reader.array4("out_shape")?,
                stride: reader.pair("stride")?,
                padding: reader.pair("padding")?,
                dilation: reader.pair("dilation")?,
                groups: reader.usize("groups")?,
            },
            "ConvTranspose2D" => OpParams::ConvTranspose2D {
                x_shape: reader.array4("x_shape")?,
                w_shape: reader.array4("w_shape")?,
                out_shape: reader.array4("out_shape")?,
                stride: reader.pair("stride")?,
                padding: reader.pair("padding")?,
                output_padding: reader.pair("output_padding")?,
                dilation: reader.pair("dilation")?,
                groups: reader.usize("groups")?,
            },
            _ => OpParams::Contiguize,
        })
    }

    /// The named values of this variant (the inverse of [`OpParams::from_values`]).
    pub fn to_values(&self) -> ParamValues {
        let entries: Vec<(&str, ParamValue)> = match *self {
            OpParams::Conv2D {
                x_shape,
                w_shape,
                out_shape,
                stride,
                padding,
                dilation,
                groups,
            } => vec![
                ("x_shape", ParamValue::Array4(x_shape)),
                ("w_shape", ParamValue::Array4(w_shape)),
                ("out_shape", ParamValue::Array4(out_shape)),
                ("stride", ParamValue::Pair(stride.0, stride.1)),
                ("padding", ParamValue::Pair(padding.0, padding.1)),
                ("dilation", ParamValue::Pair(dilation.0, dilation.1)),
                ("groups", ParamValue::Usize(groups)),
            ],
            OpParams::ConvTranspose2D {
                x_shape,
                w_shape,
                out_shape,
                stride,
                padding,
                output_padding,
                dilation,
                groups,
            } => vec![
                ("x_shape", ParamValue::Array4(x_shape)),
                ("w_shape", ParamValue::Array4(w_shape)),
                ("out_shape", ParamValue::Array4(out_shape)),
                ("stride", ParamValue::Pair(stride.0, stride.1)),
                ("padding", ParamValue::Pair(padding.0, padding.1)),
                (
                    "output_padding",
                    ParamValue::Pair(output_padding.0, output_padding.1),
                ),
                ("dilation", ParamValue::Pair(dilation.0, dilation.1)),
                ("groups", ParamValue::Usize(groups)),
            ],
            OpParams::Contiguize => Vec::new(),
        };
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }
}

/// Typed access to named values, checked against a field list.
pub(crate) struct Reader<'a> {
    pub(crate) desc: &'a VariantDesc,
    pub(crate) values: &'a ParamValues,
}

impl Reader<'_> {
    fn error(&self, message: String) -> KernelError {
        KernelError::new("op_params", KernelErrorKind::BadParams, message)
    }

    /// Fails on a name that is not one of the variant's fields.
    pub(crate) fn reject_unknown(&self) -> Result<(), KernelError> {
        match self
            .values
            .keys()
            .find(|k| !self.desc.fields.iter().any(|f| f.name == k.as_str()))
        {
            Some(k) => Err(self.error(format!("{} has no field `{k}`", self.desc.variant))),
            None => Ok(()),
        }
    }

    fn get(&self, name: &str, kind: ParamKind) -> Result<ParamValue, KernelError> {
        let value = self.values.get(name).ok_or_else(|| {
            self.error(format!(
                "{} is missing field `{name}` ({kind})",
                self.desc.variant
            ))
        })?;
        value.to_kind(kind).ok_or_else(|| {
            self.error(format!(
                "{}.{name} must be {kind}, got {} `{value}`",
                self.desc.variant,
                value.kind()
            ))
        })
    }

    pub(crate) fn usize(&self, name: &str) -> Result<usize, KernelError> {
        match self.get(name, ParamKind::Usize)? {
            ParamValue::Usize(v) => Ok(v),
            other => Err(self.error(format!("{name}: unexpected {other}"))),
        }
    }

    pub(crate) fn pair(&self, name: &str) -> Result<(usize, usize), KernelError> {
        match self.get(name, ParamKind::UsizePair)? {
            ParamValue::Pair(a, b) => Ok((a, b)),
            other => Err(self.error(format!("{name}: unexpected {other}"))),
        }
    }

    pub(crate) fn array4(&self, name: &str) -> Result<[usize; 4], KernelError> {
        match self.get(name, ParamKind::UsizeArray4)? {
            ParamValue::Array4(a) => Ok(a),
            other => Err(self.error(format!("{name}: unexpected {other}"))),
        }
    }
}

/// `conv2d` operands: `x [N, Cin, H, W]`, `weight [Cout, Cin/groups, Kh, Kw]`, optional `bias [Cout]`.
pub const CONV2D_INPUTS: &[OperandDesc] = &[
    OperandDesc::required("x", 4),
    OperandDesc::required("weight", 4),
    OperandDesc {
        optional: true,
        ..OperandDesc::required("bias", 1)
    },
];

/// `conv_transpose2d` operands: `x [N, Cin, H, W]`, `weight [Cin, Cout/groups, Kh, Kw]`.
pub const CONV_TRANSPOSE2D_INPUTS: &[OperandDesc] = &[
    OperandDesc::required("x", 4),
    OperandDesc::required("weight", 4),
];

/// `conv2d_simple` operands: `x [N, Cin, H, W]`, `kernel [Cout, Cin, Kh, Kw]`.
pub const CONV2D_SIMPLE_INPUTS: &[OperandDesc] = &[
    OperandDesc::required("x", 4),
    OperandDesc::required("kernel", 4),
];

/// `max_pool2d` operand: `x [N, C, H, W]`.
pub const MAX_POOL2D_INPUTS: &[OperandDesc] = &[OperandDesc::required("x", 4)];

/// `contiguize` operand: `x`, any rank, any layout.
pub const CONTIGUIZE_INPUTS: &[OperandDesc] = &[OperandDesc {
    any_rank: true,
    ..OperandDesc::required("x", 4)
}];

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in OpKind::ALL {
            assert_eq!(OpKind::from_name(k.name()), Some(k));
            assert_eq!(variant(k.name()).unwrap().op_kind, Some(k.name()));
        }
        assert_eq!(OpKind::from_name("Conv2dSimple"), None);
        assert!(variant("MaxPool2D").is_none());
    }

    #[test]
    fn kinds_parse_whitespace_insensitively() {
        assert_eq!(
            ParamKind::parse("(usize,usize)"),
            Some(ParamKind::UsizePair)
        );
        assert_eq!(
            ParamKind::parse(" [ usize ; 4 ] "),
            Some(ParamKind::UsizeArray4)
        );
        assert_eq!(ParamKind::parse("usize"), Some(ParamKind::Usize));
        assert_eq!(ParamKind::parse("u32"), None);
    }

    #[test]
    fn values_round_trip_and_are_checked() {
        let p = OpParams::ConvTranspose2D {
            x_shape: [1, 2, 3, 4],
            w_shape: [2, 1, 3, 3],
            out_shape: [1, 1, 5, 6],
            stride: (1, 1),
            padding: (0, 0),
            output_padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
        };
        let values = p.to_values();
        assert_eq!(
            OpParams::from_values("ConvTranspose2D", &values).unwrap(),
            p
        );
        let names: Vec<&str> = CONV_TRANSPOSE2D_FIELDS.iter().map(|f| f.name).collect();
        assert_eq!(values.len(), names.len());

        let mut wrong = values.clone();
        wrong.insert("groups".into(), ParamValue::Pair(1, 1));
        let e = OpParams::from_values("ConvTranspose2D", &wrong).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::BadParams);
        let mut extra = values.clone();
        extra.insert("bias".into(), ParamValue::Usize(1));
        assert!(OpParams::from_values("ConvTranspose2D", &extra).is_err());
        let mut missing = values;
        missing.remove("dilation");
        assert!(OpParams::from_values("ConvTranspose2D", &missing).is_err());
        let e = OpParams::from_values("Conv2dSimple", &ParamValues::new()).unwrap_err();
        assert_eq!(e.kind, KernelErrorKind::UnknownOp);
    }
}
