//! Kubernetes resource quantities (`500m`, `1.5Gi`, `1e3`), parsed exactly as
//! apimachinery's `ParseQuantity` does and kept as an exact integer count of
//! nano-units: apimachinery rounds every non-zero value up to 1n, so nanos
//! hold any quantity it can represent, and sums stay exact. No floating point.
//!
//! Values far beyond what any node reports saturate at [`Quantity::MAX`]
//! (10^27 units): upstream's int64 conversions overflow there, and saturating
//! keeps every comparison on the side of "does not fit".

use std::fmt;

/// An exact quantity in nano-units (10^-9).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quantity(i128);

const NANOS_PER_UNIT: i128 = 1_000_000_000;
/// 10^36 nanos: more than 10^8 times i64::MAX units.
const MAX_NANOS: i128 = 1_000_000_000_000_000_000_000_000_000_000_000_000;
/// BinarySI quantities are capped at 2^63-1 units (apimachinery `maxAllowed`).
const MAX_BINARY_NANOS: i128 = (i64::MAX as i128) * NANOS_PER_UNIT;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantityError {
    /// `ErrFormatWrong`: not `[+-]digits[.digits][suffix]`.
    Format,
    /// An unknown suffix (`K`, `Mb`, `i`, …).
    Suffix,
    /// `ErrNumeric`: no digits where upstream needs some (`.Pi`, `e-10`).
    Numeric,
}

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QuantityError::Format => {
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            }
            QuantityError::Suffix => "unable to parse quantity's suffix",
            QuantityError::Numeric => "unable to parse quantity's numeric part",
        })
    }
}

impl Quantity {
    pub const ZERO: Quantity = Quantity(0);
    pub const MAX: Quantity = Quantity(MAX_NANOS);

    /// `n` whole units.
    pub fn from_units(n: i64) -> Quantity {
        Quantity(i128::from(n) * NANOS_PER_UNIT)
    }

    /// Parses a quantity as `resource.ParseQuantity` does.
    pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
        let parts = split(text)?;
        let (base2, exp) = interpret(parts.suffix)?;
        // Without a single digit, upstream reads 0 on its int64 path and
        // fails (`ErrNumeric`) where it takes its big-decimal path.
        if !parts.has_digits && (base2 >= 50 || exp < -9) {
            return Err(QuantityError::Numeric);
        }
        let negative = parts.negative;
        // value = digits × 2^base2 × 10^(exp - fraction length); in nanos, +9.
        let scale = i64::from(exp) + 9 - parts.fraction.len() as i64;
        let magnitude = nanos(parts.integer, parts.fraction, base2, scale);
        let magnitude = if base2 > 0 {
            magnitude.min(MAX_BINARY_NANOS)
        } else {
            magnitude
        };
        Ok(Quantity(if negative { -magnitude } else { magnitude }))
    }

    /// Parses the JSON text of a quantity as `Quantity.UnmarshalJSON` does: a
    /// string (surrounding whitespace trimmed) or a bare number.
    pub fn from_json_text(raw: &str) -> Result<Quantity, QuantityError> {
        let raw = raw.trim();
        let inner = raw
            .strip_prefix('"')
            .and_then(|r| r.strip_suffix('"'))
            .unwrap_or(raw);
        Quantity::parse(inner.trim())
    }

    /// `Quantity.MilliValue()`: q × 1000 rounded up, away from zero
    /// (upstream's documented rule), saturating.
    pub fn milli_value(self) -> i64 {
        round_away(self.0, 1_000_000)
    }

    /// `Quantity.Value()`: q rounded up, away from zero, saturating.
    pub fn value(self) -> i64 {
        round_away(self.0, NANOS_PER_UNIT)
    }

    /// `RoundUp(-3)`, as API defaulting does to every ResourceList quantity:
    /// up to a whole milli-unit, away from zero.
    pub fn round_up_to_milli(self) -> Quantity {
        let rem = self.0 % 1_000_000;
        if rem == 0 {
            self
        } else {
            Quantity(self.0 - rem + rem.signum() * 1_000_000)
        }
    }

    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    pub fn saturating_add(self, other: Quantity) -> Quantity {
        Quantity(self.0.saturating_add(other.0).clamp(-MAX_NANOS, MAX_NANOS))
    }
}

/// A quantity as the scheduler compares it: `MilliValue()` and `Value()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Amount {
    pub milli: i64,
    pub units: i64,
}

impl Amount {
    /// Parses `text` straight to its milli and unit values. The canonical
    /// forms the API server writes (`7910m`, `31615432Ki`, `110`) take a
    /// 64-bit fast path; everything else goes through [`Quantity::parse`].
    /// Read for each node a filter reaches, so it is worth the shortcut.
    pub fn parse(text: &str) -> Result<Amount, QuantityError> {
        if let Some(amount) = Amount::fast(text) {
            return Ok(amount);
        }
        Quantity::parse(text).map(Amount::from)
    }

    fn fast(text: &str) -> Option<Amount> {
        let bytes = text.as_bytes();
        let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 18 {
            return None;
        }
        let (number, suffix) = text.split_at(digits);
        let n: i64 = number.parse().ok()?;
        let units = match suffix {
            "m" => {
                return Some(Amount {
                    milli: n,
                    units: (n + 999) / 1000,
                });
            }
            "" => n,
            "k" => n.checked_mul(1_000)?,
            "M" => n.checked_mul(1_000_000)?,
            "G" => n.checked_mul(1_000_000_000)?,
            "Ki" | "Mi" | "Gi" | "Ti" => {
                let shift = match suffix {
                    "Ki" => 10,
                    "Mi" => 20,
                    "Gi" => 30,
                    _ => 40,
                };
                n.checked_mul(1 << shift)?
            }
            _ => return None,
        };
        Some(Amount {
            milli: units.checked_mul(1000)?,
            units,
        })
    }
}

impl From<Quantity> for Amount {
    fn from(q: Quantity) -> Amount {
        Amount {
            milli: q.milli_value(),
            units: q.value(),
        }
    }
}

/// n / d rounded away from zero, for d > 0, clamped to i64.
fn round_away(n: i128, d: i128) -> i64 {
    let magnitude = n.unsigned_abs().div_ceil(d.unsigned_abs());
    let q = if n < 0 {
        -(magnitude as i128)
    } else {
        magnitude as i128
    };
    i64::try_from(q).unwrap_or(if q < 0 { i64::MIN } else { i64::MAX })
}

struct Parts<'a> {
    negative: bool,
    /// Whether any digit, even a leading zero, was written.
    has_digits: bool,
    /// Digits before the point, leading zeros stripped.
    integer: &'a [u8],
    /// Digits after the point.
    fraction: &'a [u8],
    suffix: &'a str,
}

/// `parseQuantityString`: sign, digits, optional `.digits`, then a suffix of
/// `[eEinumkKMGTP]*[-+]?[0-9]*` that must run to the end.
fn split(text: &str) -> Result<Parts<'_>, QuantityError> {
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        return Err(QuantityError::Format);
    }
    let mut pos = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            pos = 1;
            true
        }
        Some(b'+') => {
            pos = 1;
            false
        }
        _ => false,
    };
    let digits_from = |start: usize| {
        start
            + bytes
                .get(start..)
                .unwrap_or_default()
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count()
    };
    let int_end = digits_from(pos);
    let mut has_digits = int_end > pos;
    let integer = bytes.get(pos..int_end).unwrap_or_default();
    let integer = trim_leading_zeros(integer);
    let mut fraction: &[u8] = &[];
    pos = int_end;
    if bytes.get(pos) == Some(&b'.') {
        let frac_end = digits_from(pos + 1);
        fraction = bytes.get(pos + 1..frac_end).unwrap_or_default();
        has_digits |= !fraction.is_empty();
        pos = frac_end;
    }
    let suffix_start = pos;
    while let Some(b) = bytes.get(pos) {
        if b"eEinumkKMGTP".contains(b) {
            pos += 1;
        } else {
            break;
        }
    }
    if let Some(b'-' | b'+') = bytes.get(pos) {
        pos += 1;
    }
    if digits_from(pos) != bytes.len() {
        return Err(QuantityError::Format);
    }
    Ok(Parts {
        negative,
        has_digits,
        integer,
        fraction,
        suffix: text.get(suffix_start..).unwrap_or_default(),
    })
}

fn trim_leading_zeros(digits: &[u8]) -> &[u8] {
    let zeros = digits.iter().take_while(|&&b| b == b'0').count();
    digits.get(zeros..).unwrap_or_default()
}

/// `suffixHandler.interpret`: (binary exponent, decimal exponent).
fn interpret(suffix: &str) -> Result<(u32, i32), QuantityError> {
    Ok(match suffix {
        "" => (0, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        _ => {
            let exponent = suffix
                .strip_prefix(['e', 'E'])
                .filter(|e| !e.is_empty())
                .ok_or(QuantityError::Suffix)?;
            // strconv.ParseInt: optional sign, digits only, fits int64. The
            // result is then cut to int32; any exponent that large saturates
            // or rounds to 1n here anyway, so clamping changes nothing.
            let n: i64 = exponent.parse().map_err(|_| QuantityError::Suffix)?;
            (0, n.clamp(-1_000, 1_000) as i32)
        }
    })
}

/// ceil(|digits| × 2^base2 × 10^scale), clamped to [`MAX_NANOS`].
fn nanos(integer: &[u8], fraction: &[u8], base2: u32, scale: i64) -> i128 {
    let significant = integer.len() + fraction.len();
    if significant <= 19 {
        // Fits u64, and × 2^60 still fits u128: exact in native integers.
        let mut n: u128 = 0;
        for &d in integer.iter().chain(fraction) {
            n = n * 10 + u128::from(d - b'0');
        }
        return scale_exact(n << base2, scale);
    }
    // Long digit strings: exact decimal arithmetic on the digits.
    let mut digits: Vec<u8> = integer.iter().chain(fraction).map(|d| d - b'0').collect();
    for _ in 0..base2 {
        double(&mut digits);
    }
    let digits = trim_leading_zeros_values(&digits);
    if scale >= 0 {
        // Anything with more than 37 digits is past the cap.
        if digits.len() as i64 + scale > 37 {
            return if digits.is_empty() { 0 } else { MAX_NANOS };
        }
        let n = digits.iter().fold(0i128, |n, &d| n * 10 + i128::from(d));
        return (n * 10i128.pow(scale as u32)).min(MAX_NANOS);
    }
    let cut = digits.len().saturating_sub(scale.unsigned_abs() as usize);
    let (whole, rest) = digits.split_at(cut);
    if whole.len() > 37 {
        return MAX_NANOS;
    }
    let n = whole.iter().fold(0i128, |n, &d| n * 10 + i128::from(d));
    (n + i128::from(rest.iter().any(|&d| d != 0))).min(MAX_NANOS)
}

fn trim_leading_zeros_values(digits: &[u8]) -> &[u8] {
    let zeros = digits.iter().take_while(|&&d| d == 0).count();
    digits.get(zeros..).unwrap_or_default()
}

/// Doubles a big-endian vector of decimal digits in place.
fn double(digits: &mut Vec<u8>) {
    let mut carry = 0;
    for d in digits.iter_mut().rev() {
        let v = *d * 2 + carry;
        *d = v % 10;
        carry = v / 10;
    }
    if carry > 0 {
        digits.insert(0, carry);
    }
}

/// ceil(n × 10^scale), clamped to [`MAX_NANOS`].
fn scale_exact(n: u128, scale: i64) -> i128 {
    if n == 0 {
        return 0;
    }
    let max = MAX_NANOS as u128;
    let result = if scale >= 0 {
        u32::try_from(scale)
            .ok()
            .and_then(|s| 10u128.checked_pow(s))
            .and_then(|p| n.checked_mul(p))
            .unwrap_or(u128::MAX)
    } else {
        match u32::try_from(scale.unsigned_abs())
            .ok()
            .and_then(|s| 10u128.checked_pow(s))
        {
            Some(p) => n.div_ceil(p),
            // 10^|scale| > u128::MAX > n: a non-zero value rounds up to 1n.
            None => 1,
        }
    };
    result.min(max) as i128
}

#[cfg(test)]
mod tests;
