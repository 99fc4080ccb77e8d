//! Element data types a provider can take, with their names and byte sizes.
//!
//! `DType` is the runtime tag of a tensor's element type. Its `name` (`"F32"`) is the spelling
//! used by kernel contracts and by the protocol; its `suffix` (`"f32"`) is the one used in
//! entry-point symbols (`fuel_reference_backend::ops::conv2d_f32`).

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
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 4] = [DType::F32, DType::F64, DType::BF16, DType::F16];

    /// Size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 => 8,
            DType::BF16 | DType::F16 => 2,
        }
    }

    /// The contract spelling: `"F32"`, `"F64"`, `"BF16"`, `"F16"`.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "F32",
            DType::F64 => "F64",
            DType::BF16 => "BF16",
            DType::F16 => "F16",
        }
    }

    /// The entry-point symbol suffix: `"f32"`, `"f64"`, `"bf16"`, `"f16"`.
    pub fn suffix(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::BF16 => "bf16",
            DType::F16 => "f16",
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
        assert_eq!(sizes, [4, 8, 2, 2]);
    }
}
