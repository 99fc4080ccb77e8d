//! The evidence table as a reader sees it: rows that say exactly the same thing for several
//! dtypes — the same check, the same counts, the same outcome, differing only in the dtype's
//! name and its entry point's suffix (`_f32`) — are shown once, listing the dtypes. Rows that
//! differ in anything else (a count, a percentage, a word) stay apart.

use super::view::Row;
use fkc_provider::DType;

/// Where a row named its dtype (`F32`): a character no generated sentence contains.
const NAME: &str = "\u{1}";
/// Where a row named its dtype's symbol suffix (`_f32`).
const SUFFIX: &str = "\u{2}";

/// A row that names exactly one dtype, with that dtype abstracted away.
#[derive(Debug, PartialEq, Eq)]
struct Abstracted {
    dtype: DType,
    check: String,
    text: String,
}

/// The page's evidence rows: (check, what ran) in order, identical per-dtype rows merged into
/// the first one's place.
pub fn merged(rows: &[(String, String)]) -> Vec<Row> {
    let abstracted: Vec<Option<Abstracted>> = rows
        .iter()
        .map(|(check, text)| abstracted(check, text))
        .collect();
    let mut taken = vec![false; rows.len()];
    let mut out = Vec::with_capacity(rows.len());
    for (index, (check, text)) in rows.iter().enumerate() {
        if taken.get(index).copied().unwrap_or(true) {
            continue;
        }
        let group = same_but_dtype(&abstracted, &taken, index);
        for &member in &group {
            if let Some(slot) = taken.get_mut(member) {
                *slot = true;
            }
        }
        let first = abstracted.get(index).and_then(Option::as_ref);
        out.push(match first {
            Some(first) if group.len() > 1 => {
                let dtypes: Vec<DType> = group
                    .iter()
                    .filter_map(|&i| abstracted.get(i)?.as_ref().map(|a| a.dtype))
                    .collect();
                merged_row(first, &dtypes)
            }
            _ => plain(check, text),
        });
    }
    out
}

/// The rows, from `index` on and not yet taken, equal to row `index` but for their dtype
/// (one row per dtype, in order).
fn same_but_dtype(abstracted: &[Option<Abstracted>], taken: &[bool], index: usize) -> Vec<usize> {
    let Some(Some(first)) = abstracted.get(index) else {
        return vec![index];
    };
    let mut group = vec![index];
    let mut dtypes = vec![first.dtype];
    for (other, row) in abstracted.iter().enumerate().skip(index + 1) {
        let Some(row) = row else { continue };
        let free = !taken.get(other).copied().unwrap_or(true);
        let same = row.check == first.check && row.text == first.text;
        if free && same && !dtypes.contains(&row.dtype) {
            group.push(other);
            dtypes.push(row.dtype);
        }
    }
    group
}

fn plain(check: &str, text: &str) -> Row {
    Row {
        field: check.to_owned(),
        value: text.to_owned(),
        code: false,
        note: None,
    }
}

/// One row for several dtypes: the check lists them where it named one; in the text, a name
/// becomes `T` (defined in front: "T = F32, F64: …") and a symbol's suffix the list of
/// suffixes (`conv2d_{f32,f64}`).
fn merged_row(first: &Abstracted, dtypes: &[DType]) -> Row {
    let names = dtypes
        .iter()
        .map(|d| d.name())
        .collect::<Vec<_>>()
        .join(", ");
    let suffixes = dtypes
        .iter()
        .map(|d| d.suffix())
        .collect::<Vec<_>>()
        .join(",");
    let spelled = |text: &str| {
        text.replace(NAME, "T")
            .replace(SUFFIX, &format!("_{{{suffixes}}}"))
    };
    let check = first.check.replace(NAME, &names).replace(SUFFIX, "");
    let prefix = if first.text.contains(NAME) {
        format!("T = {names}: ")
    } else if first.check.contains(NAME) {
        String::new()
    } else {
        format!("{names}: ")
    };
    plain(&check, &format!("{prefix}{}", spelled(&first.text)))
}

/// The row with its dtype abstracted, when it names exactly one dtype (by name, as a whole
/// word, or as a symbol's suffix); `None` when it names none or several.
fn abstracted(check: &str, text: &str) -> Option<Abstracted> {
    let named = named(check) | named(text);
    if named.count_ones() != 1 {
        return None;
    }
    let dtype = *DType::ALL.get(named.trailing_zeros() as usize)?;
    let suffix = format!("_{}", dtype.suffix());
    let abstract_one = |s: &str| {
        let named = replace(s, dtype.name(), true, NAME);
        replace(&named, &suffix, false, SUFFIX)
    };
    Some(Abstracted {
        dtype,
        check: abstract_one(check),
        text: abstract_one(text),
    })
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The dtypes `s` names, as bits over [`DType::ALL`]: an [`occurrences`] of a dtype's name
/// (as a whole word) or of its symbol suffix (`_f32`, ending a word). Both are made of word
/// characters, so each is a whole word or the end of one: one pass over the words finds them.
fn named(s: &str) -> u32 {
    let mut named = 0;
    for word in s.split(|c: char| !is_word(c)).filter(|w| !w.is_empty()) {
        for (bit, dtype) in DType::ALL.iter().enumerate() {
            let suffixed =
                (word.strip_suffix(dtype.suffix())).is_some_and(|rest| rest.ends_with('_'));
            if word == dtype.name() || suffixed {
                named |= 1 << bit;
            }
        }
    }
    named
}

/// Byte offsets of `needle` in `haystack` that end a word (nothing word-like follows), and,
/// when `whole`, also start one.
fn occurrences(haystack: &str, needle: &str, whole: bool) -> Vec<usize> {
    haystack
        .match_indices(needle)
        .map(|(at, _)| at)
        .filter(|&at| {
            let before = haystack.get(..at).and_then(|s| s.chars().next_back());
            let after = haystack
                .get(at + needle.len()..)
                .and_then(|s| s.chars().next());
            let glued = after.is_some_and(is_word) || (whole && before.is_some_and(is_word));
            !glued
        })
        .collect()
}

/// `haystack` with the [`occurrences`] of `needle` replaced by `with`.
fn replace(haystack: &str, needle: &str, whole: bool, with: &str) -> String {
    let mut out = String::with_capacity(haystack.len());
    let mut cursor = 0;
    for at in occurrences(haystack, needle, whole) {
        out.push_str(haystack.get(cursor..at).unwrap_or(""));
        out.push_str(with);
        cursor = at + needle.len();
    }
    out.push_str(haystack.get(cursor..).unwrap_or(""));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(rows: &[(&str, &str)]) -> Vec<(String, String)> {
        rows.iter()
            .map(|(c, t)| ((*c).to_owned(), (*t).to_owned()))
            .collect()
    }

    fn shown(rows: &[Row]) -> Vec<(String, String)> {
        rows.iter()
            .map(|r| (r.field.clone(), r.value.clone()))
            .collect()
    }

    #[test]
    fn the_dtypes_a_text_names_are_its_occurrences_of_names_and_suffixes() {
        let texts = [
            "conv2d_f32 on F32",
            "xF32 F32x _F32 F32_",
            "a_bf16 and a_bf16b, BF16.",
            "the f16 tail, _f16",
            "F8E5M2·I8 (u8_i8)",
            "ÄF64 F64é pool_f64",
            "",
        ];
        for text in texts {
            let by_search = DType::ALL.iter().enumerate().fold(0, |bits, (bit, dtype)| {
                let suffix = format!("_{}", dtype.suffix());
                let found = !occurrences(text, dtype.name(), true).is_empty()
                    || !occurrences(text, &suffix, false).is_empty();
                if found { bits | 1 << bit } else { bits }
            });
            assert_eq!(named(text), by_search, "{text}");
        }
        assert_eq!(named("conv2d_f32 on F64").count_ones(), 2);
    }

    #[test]
    fn identical_rows_but_for_the_dtype_are_merged_in_the_first_ones_place() {
        let input = rows(&[
            ("domain", "24 admitted samples"),
            (
                "summation order",
                "on 8 F32 samples, the naive nested sum in F32",
            ),
            (
                "F32 special values",
                "6 samples through `ops::conv_f32`: no crash",
            ),
            (
                "summation order",
                "on 8 F64 samples, the naive nested sum in F64",
            ),
            (
                "F64 special values",
                "6 samples through `ops::conv_f64`: no crash",
            ),
            (
                "BF16 special values",
                "6 samples through `ops::conv_bf16`: no crash",
            ),
        ]);
        assert_eq!(
            shown(&merged(&input)),
            rows(&[
                ("domain", "24 admitted samples"),
                (
                    "summation order",
                    "T = F32, F64: on 8 T samples, the naive nested sum in T"
                ),
                (
                    "F32, F64, BF16 special values",
                    "6 samples through `ops::conv_{f32,f64,bf16}`: no crash"
                ),
            ])
        );
    }

    #[test]
    fn rows_differing_in_anything_but_the_dtype_stay_apart() {
        let input = rows(&[
            (
                "F32 accepts the domain",
                "24 samples through `k_f32`: worst 20%",
            ),
            (
                "F64 accepts the domain",
                "6 samples through `k_f64`: worst 0%",
            ),
            (
                "BF16 accepts the domain",
                "6 samples through `k_bf16`: worst 7%",
            ),
            (
                "F16 accepts the domain",
                "6 samples through `k_f16`: worst 7%",
            ),
            ("undeclared dtypes", "BF16, F16: refused"),
            ("undeclared dtypes", "BF16, F16: refused"),
        ]);
        let out = merged(&input);
        // Only BF16 and F16 say the same thing; rows naming two dtypes are never merged.
        assert_eq!(out.len(), 5, "{:?}", shown(&out));
        assert_eq!(out[0].value, "24 samples through `k_f32`: worst 20%");
        assert_eq!(out[1].value, "6 samples through `k_f64`: worst 0%");
        assert_eq!(out[2].field, "BF16, F16 accepts the domain");
        assert_eq!(out[2].value, "6 samples through `k_{bf16,f16}`: worst 7%");
        assert_eq!(out[3].value, "BF16, F16: refused");
        assert_eq!(out[4].value, "BF16, F16: refused");
    }

    #[test]
    fn a_dtype_inside_another_word_is_not_a_dtype() {
        // `BF16` contains `F16`, and `xf32` is no suffix: neither names F16 or F32.
        assert_eq!(
            abstracted("BF16 check", "through `k_bf16`, xf32"),
            Some(Abstracted {
                dtype: DType::BF16,
                check: format!("{NAME} check"),
                text: format!("through `k{SUFFIX}`, xf32"),
            })
        );
        let input = rows(&[("check", "F32 and F64"), ("check", "F64 and F32")]);
        assert_eq!(shown(&merged(&input)), input);
    }
}
