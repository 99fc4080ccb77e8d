//! Element data types a provider can take, with their names, byte sizes and number formats.
//!
//! `DType` is the runtime tag of a tensor's element type. Its `name` (`"F32"`) is the spelling
//! used by kernel contracts and by the protocol; its `suffix` (`"f32"`) is the one used in
//! entry-point symbols (`fuel_reference_backend::ops::conv2d_f32`). [`DType::format`] says what
//! its bit patterns mean: an IEEE-style binary float, a two's-complement or unsigned integer, or
//! a boolean.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DType {
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
    /// bfloat16 (`half::bf16`): 8 exponent bits, 8 significand bits.
    BF16,
    /// IEEE 754 binary16 (`half::f16`).
    F16,
    /// 8-bit float, 5 exponent bits and 2 stored significand bits (OCP FP8 E5M2): IEEE rules,
    /// with ±Inf, NaNs, subnormals and round-to-nearest-even ([`crate::f8::F8E5M2`]).
    F8E5M2,
    /// Signed 8-bit integer (two's complement).
    I8,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 32-bit integer (two's complement).
    I32,
    /// Signed 64-bit integer (two's complement).
    I64,
    /// Boolean, one byte: 0 (false) or 1 (true).
    Bool,
}

/// What a dtype's bit patterns mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A binary float with IEEE 754 rules.
    Float {
        /// Exponent bits.
        exponent: u32,
        /// Stored significand bits.
        mantissa: u32,
    },
    /// An integer.
    Int {
        /// Width in bits.
        bits: u32,
        /// Two's complement (else unsigned).
        signed: bool,
    },
    /// 0 or 1.
    Bool,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 10] = [
        DType::F32,
        DType::F64,
        DType::BF16,
        DType::F16,
        DType::F8E5M2,
        DType::I8,
        DType::U8,
        DType::I32,
        DType::I64,
        DType::Bool,
    ];

    /// The dtypes of protocol version 2 (fkc-provider 0.4 and older): the four floats.
    pub const PROTOCOL_2: [DType; 4] = [DType::F32, DType::F64, DType::BF16, DType::F16];

    /// Size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::BF16 | DType::F16 => 2,
            DType::F8E5M2 | DType::I8 | DType::U8 | DType::Bool => 1,
        }
    }

    /// What the bit patterns mean.
    pub fn format(self) -> Format {
        match self {
            DType::F64 => Format::Float {
                exponent: 11,
                mantissa: 52,
            },
            DType::F32 => Format::Float {
                exponent: 8,
                mantissa: 23,
            },
            DType::BF16 => Format::Float {
                exponent: 8,
                mantissa: 7,
            },
            DType::F16 => Format::Float {
                exponent: 5,
                mantissa: 10,
            },
            DType::F8E5M2 => Format::Float {
                exponent: 5,
                mantissa: 2,
            },
            DType::I8 => Format::Int {
                bits: 8,
                signed: true,
            },
            DType::U8 => Format::Int {
                bits: 8,
                signed: false,
            },
            DType::I32 => Format::Int {
                bits: 32,
                signed: true,
            },
            DType::I64 => Format::Int {
                bits: 64,
                signed: true,
            },
            DType::Bool => Format::Bool,
        }
    }

    /// A floating-point dtype (NaN, ±Inf, signed zeros and rounding).
    pub fn is_float(self) -> bool {
        matches!(self.format(), Format::Float { .. })
    }

    /// The smallest and largest value of an integer or boolean dtype (`None` for a float).
    pub fn int_range(self) -> Option<(i128, i128)> {
        match self.format() {
            Format::Float { .. } => None,
            Format::Bool => Some((0, 1)),
            Format::Int { bits, signed: true } => {
                Some((-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1))
            }
            Format::Int {
                bits,
                signed: false,
            } => Some((0, (1i128 << bits) - 1)),
        }
    }

    /// The contract spelling: `"F32"`, `"I64"`, `"F8E5M2"`, `"Bool"`.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "F32",
            DType::F64 => "F64",
            DType::BF16 => "BF16",
            DType::F16 => "F16",
            DType::F8E5M2 => "F8E5M2",
            DType::I8 => "I8",
            DType::U8 => "U8",
            DType::I32 => "I32",
            DType::I64 => "I64",
            DType::Bool => "Bool",
        }
    }

    /// The entry-point symbol suffix: `"f32"`, `"i64"`, `"f8e5m2"`, `"bool"`.
    pub fn suffix(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::BF16 => "bf16",
            DType::F16 => "f16",
            DType::F8E5M2 => "f8e5m2",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::Bool => "bool",
        }
    }

    /// Parses the contract spelling (`"F32"`); exact and case-sensitive.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sizes() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
            assert_eq!(d.to_string(), d.name());
            assert_eq!(d.suffix(), d.name().to_lowercase());
        }
        assert_eq!(DType::from_name("f32"), None);
        let sizes: Vec<usize> = DType::ALL.iter().map(|d| d.size_bytes()).collect();
        assert_eq!(sizes, [4, 8, 2, 2, 1, 1, 1, 4, 8, 1]);
    }

    #[test]
    fn formats_and_ranges() {
        let floats: Vec<DType> = DType::ALL.into_iter().filter(|d| d.is_float()).collect();
        assert_eq!(
            floats,
            [
                DType::F32,
                DType::F64,
                DType::BF16,
                DType::F16,
                DType::F8E5M2
            ]
        );
        assert_eq!(DType::I8.int_range(), Some((-128, 127)));
        assert_eq!(DType::U8.int_range(), Some((0, 255)));
        assert_eq!(
            DType::I64.int_range(),
            Some((i128::from(i64::MIN), i128::from(i64::MAX)))
        );
        assert_eq!(DType::Bool.int_range(), Some((0, 1)));
        assert_eq!(DType::F16.int_range(), None);
        for d in DType::ALL {
            let bits = match d.format() {
                Format::Float { exponent, mantissa } => 1 + exponent + mantissa,
                Format::Int { bits, .. } => bits,
                Format::Bool => 8,
            };
            assert_eq!(bits as usize, d.size_bytes() * 8, "{d}");
        }
    }
}
