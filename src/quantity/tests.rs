//! Against upstream's own vectors (`upstream_vectors.tsv`, from apimachinery's
//! `quantity_test.go` and probes run on the same Go code) and its invalid
//! inputs, plus the few places where this crate deliberately differs.

use super::*;

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// An exact decimal string (at most 9 fractional digits) in nanos, past
/// the cap saturated as this crate does.
fn exact_nanos(decimal: &str) -> i128 {
    let (int, frac) = decimal.split_once('.').unwrap_or((decimal, ""));
    assert!(frac.len() <= 9, "{decimal}");
    let frac = format!("{frac:0<9}");
    int.parse::<i128>()
        .unwrap()
        .checked_mul(NANOS_PER_UNIT)
        .map_or(MAX_NANOS, |n| {
            (n + frac.parse::<i128>().unwrap()).min(MAX_NANOS)
        })
}

fn expected(column: &str) -> i64 {
    if column == "overflow" {
        i64::MAX
    } else {
        column.parse().unwrap()
    }
}

#[test]
fn upstream_valid_vectors() {
    let vectors = include_str!("upstream_vectors.tsv");
    let mut checked = 0;
    for line in vectors.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [input, exact, milli, value] = cols[..] else {
            panic!("bad vector line {line:?}")
        };
        let parsed = q(input);
        assert_eq!(parsed.0, exact_nanos(exact), "{input}: exact value");
        assert_eq!(parsed.milli_value(), expected(milli), "{input}: MilliValue");
        assert_eq!(parsed.value(), expected(value), "{input}: Value");
        // TestQuantityParse: "-x" is the negation of "x", "+x" is "x".
        assert_eq!(q(&format!("-{input}")).0, -parsed.0, "-{input}");
        assert_eq!(q(&format!("+{input}")), parsed, "+{input}");
        checked += 1;
    }
    assert!(checked > 190, "{checked} vectors");
}

#[test]
fn the_fast_path_agrees_with_the_exact_parse() {
    let vectors = include_str!("upstream_vectors.tsv");
    let inputs = vectors
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split('\t').next());
    let extra = [
        "7910m",
        "31615432Ki",
        "110",
        "0",
        "4",
        "95551679124",
        "1Gi",
        "999999999999999999m",
        "999999999999999999Ti",
        "9223372036854775807",
        "1000k",
        "18Ei",
    ];
    for input in inputs.chain(extra) {
        assert_eq!(Amount::parse(input), Ok(Amount::from(q(input))), "{input}");
    }
    for bad in ["", "1K", "1.1.M", "abc", "1e", "-"] {
        assert_eq!(
            Amount::parse(bad).err(),
            Quantity::parse(bad).err(),
            "{bad:?}"
        );
    }
}

#[test]
fn upstream_invalid_vectors() {
    use QuantityError::*;
    let cases = [
        // quantity_test.go: TestQuantityParse invalid, NonNumericPanic, ValueSet.
        ("", Format),
        ("1.1.M", Format),
        ("1+1.0M", Format),
        ("0.1mi", Suffix),
        ("0.1am", Format),
        ("aoeu", Format),
        (".5i", Suffix),
        ("1i", Suffix),
        ("-3.01i", Suffix),
        ("-3.01e-", Suffix),
        (" 1", Format),
        ("1 ", Format),
        ("Non-Numeric", Format),
        ("invalid", Format),
        // Probes run on upstream's code.
        ("K", Suffix),
        ("1K", Suffix),
        ("1e", Suffix),
        ("1e+", Suffix),
        ("1E+", Suffix),
        ("1.1i", Suffix),
        ("1Mi5", Suffix),
        ("1ee3", Suffix),
        ("1kk", Suffix),
        ("++1", Suffix),
        ("-+1", Suffix),
        ("1E9223372036854775808", Suffix),
        ("1k3", Suffix),
        ("1G-3", Suffix),
        ("1-3", Suffix),
        ("e", Suffix),
        ("1.5e3.5", Format),
        ("1e3e", Format),
        ("1e3i", Format),
        ("0x10", Format),
        ("1_000", Format),
        ("1,5", Format),
        ("1KiB", Format),
        ("1e3k", Format),
        ("1 Ki", Format),
        (".e-10", Numeric),
        ("-.e-10", Numeric),
        ("e-10", Numeric),
        (".Pi", Numeric),
    ];
    for (input, kind) in cases {
        assert_eq!(Quantity::parse(input), Err(kind), "{input:?}");
    }
}

#[test]
fn upstream_quirks_that_parse_as_zero() {
    for zero in [
        "-", "+", ".", "-.", "+.", "E", "-E", "Ki", "+Ki", "m", "n", "e3", "E3", ".e3", "00", "0Pi",
    ] {
        assert_eq!(q(zero), Quantity::ZERO, "{zero:?}");
    }
}

#[test]
fn negative_values_round_away_from_zero() {
    // Upstream's int64 path and its documentation (TestQuantityRoundUp).
    assert_eq!(q("-9.01").value(), -10);
    assert_eq!(q("-1.5m").milli_value(), -2);
    assert_eq!(q("-1e-9").value(), -1);
    assert_eq!(q("-3.001n").0, -4);
}

/// Where upstream overflows or hangs, this crate saturates.
#[test]
fn absurd_exponents_saturate_instead_of_wrapping() {
    assert_eq!(
        q("1e4294967296"),
        Quantity::MAX,
        "upstream truncates the exponent to e0"
    );
    assert_eq!(
        q("1e-4294967287"),
        Quantity(1),
        "upstream truncates the exponent to e9"
    );
    assert_eq!(q("1e2147483648"), Quantity::MAX, "upstream hangs");
    assert_eq!(q("1e-1000000000"), Quantity(1), "upstream hangs");
    assert_eq!(q("1e30").value(), i64::MAX);
    assert_eq!(q("-1e30").value(), i64::MIN);
    let long = format!("1{}", "0".repeat(60));
    assert_eq!(q(&long), Quantity::MAX);
    let tiny = format!("0.{}1", "0".repeat(60));
    assert_eq!(q(&tiny), Quantity(1));
}

#[test]
fn long_digit_strings_are_exact() {
    // More than 19 significant digits take the decimal-digit path.
    assert_eq!(q("1234567890.123456789").0, 1_234_567_890_123_456_789);
    assert_eq!(
        q("1234567890.1234567891").0,
        1_234_567_890_123_456_790,
        "rounded up to 1n"
    );
    assert_eq!(q("0.00000000000000000000000000001Ki").0, 1);
    assert_eq!(
        q("1.00000000000000000001Ki").0,
        1024 * NANOS_PER_UNIT + 1,
        "1024.0000000000000000102 rounds up to the next nano"
    );
    assert_eq!(
        q("12345678901234567890123Mi"),
        Quantity::from_units(i64::MAX),
        "BinarySI cap"
    );
}

#[test]
fn json_text_as_unmarshal_json_reads_it() {
    // TestJSONWhitespace, and bare numbers.
    for (raw, units) in [
        ("\" 1\"", 1),
        ("\"1 \"", 1),
        ("1", 1),
        (" 1", 1),
        ("1 ", 1),
        ("10", 10),
        ("-1", -1),
        ("1.5e3", 1500),
        ("\"64Gi\"", 68_719_476_736),
    ] {
        assert_eq!(
            Quantity::from_json_text(raw).map(Quantity::value),
            Ok(units),
            "{raw}"
        );
    }
    for bad in ["\"\"", "true", "[1]", "\"1 Gi\""] {
        assert!(Quantity::from_json_text(bad).is_err(), "{bad}");
    }
}

#[test]
fn api_defaulting_rounds_up_to_milli() {
    assert_eq!(q("1n").round_up_to_milli(), q("1m"));
    assert_eq!(q("1500u").round_up_to_milli(), q("2m"));
    assert_eq!(q("-1n").round_up_to_milli(), q("-1m"));
    assert_eq!(q("250m").round_up_to_milli(), q("250m"));
    // So three containers of 0.3333m cpu ask for 3m, not ceil(0.9999m) = 1m.
    let one = q("333300n").round_up_to_milli();
    assert_eq!(one.saturating_add(one).saturating_add(one).milli_value(), 3);
}

#[test]
fn sums_saturate() {
    assert_eq!(Quantity::MAX.saturating_add(Quantity::MAX), Quantity::MAX);
    assert_eq!(
        Quantity::from_units(2)
            .saturating_add(q("500m"))
            .milli_value(),
        2500
    );
}
