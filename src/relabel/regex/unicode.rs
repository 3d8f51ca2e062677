//! Go's Unicode class names (`\pL`, `\p{Greek}`) and their classes.
//!
//! Go accepts an exact, version-dependent set of category and script names, while regex-syntax
//! matches names loosely and knows many more. So the accepted names are listed here as Go has
//! them, the ranges come from regex-syntax's tables (asked for by explicit `gc=`/`sc=`), and
//! spellings only newer Go versions accept are refused with a reason rather than guessed.

use std::sync::OnceLock;

use regex_syntax::hir::{self, Class, ClassUnicode, ClassUnicodeRange};

/// Go's `unicode.Categories` keys (identical in Go 1.19 and 1.26).
pub(super) const GO_CATEGORIES: &[&str] = &[
    "C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N",
    "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So",
    "Z", "Zl", "Zp", "Zs",
];

/// Go 1.26's `unicode.Scripts` keys (Unicode 15.0).
pub(super) const GO_SCRIPTS: &[&str] = &[
    "Adlam",
    "Ahom",
    "Anatolian_Hieroglyphs",
    "Arabic",
    "Armenian",
    "Avestan",
    "Balinese",
    "Bamum",
    "Bassa_Vah",
    "Batak",
    "Bengali",
    "Bhaiksuki",
    "Bopomofo",
    "Brahmi",
    "Braille",
    "Buginese",
    "Buhid",
    "Canadian_Aboriginal",
    "Carian",
    "Caucasian_Albanian",
    "Chakma",
    "Cham",
    "Cherokee",
    "Chorasmian",
    "Common",
    "Coptic",
    "Cuneiform",
    "Cypriot",
    "Cypro_Minoan",
    "Cyrillic",
    "Deseret",
    "Devanagari",
    "Dives_Akuru",
    "Dogra",
    "Duployan",
    "Egyptian_Hieroglyphs",
    "Elbasan",
    "Elymaic",
    "Ethiopic",
    "Georgian",
    "Glagolitic",
    "Gothic",
    "Grantha",
    "Greek",
    "Gujarati",
    "Gunjala_Gondi",
    "Gurmukhi",
    "Han",
    "Hangul",
    "Hanifi_Rohingya",
    "Hanunoo",
    "Hatran",
    "Hebrew",
    "Hiragana",
    "Imperial_Aramaic",
    "Inherited",
    "Inscriptional_Pahlavi",
    "Inscriptional_Parthian",
    "Javanese",
    "Kaithi",
    "Kannada",
    "Kawi",
    "Katakana",
    "Kayah_Li",
    "Kharoshthi",
    "Khitan_Small_Script",
    "Khmer",
    "Khojki",
    "Khudawadi",
    "Lao",
    "Latin",
    "Lepcha",
    "Limbu",
    "Linear_A",
    "Linear_B",
    "Lisu",
    "Lycian",
    "Lydian",
    "Mahajani",
    "Makasar",
    "Malayalam",
    "Mandaic",
    "Manichaean",
    "Marchen",
    "Masaram_Gondi",
    "Medefaidrin",
    "Meetei_Mayek",
    "Mende_Kikakui",
    "Meroitic_Cursive",
    "Meroitic_Hieroglyphs",
    "Miao",
    "Modi",
    "Mongolian",
    "Mro",
    "Multani",
    "Myanmar",
    "Nabataean",
    "Nag_Mundari",
    "Nandinagari",
    "New_Tai_Lue",
    "Newa",
    "Nko",
    "Nushu",
    "Nyiakeng_Puachue_Hmong",
    "Ogham",
    "Ol_Chiki",
    "Old_Hungarian",
    "Old_Italic",
    "Old_North_Arabian",
    "Old_Permic",
    "Old_Persian",
    "Old_Sogdian",
    "Old_South_Arabian",
    "Old_Turkic",
    "Old_Uyghur",
    "Oriya",
    "Osage",
    "Osmanya",
    "Pahawh_Hmong",
    "Palmyrene",
    "Pau_Cin_Hau",
    "Phags_Pa",
    "Phoenician",
    "Psalter_Pahlavi",
    "Rejang",
    "Runic",
    "Samaritan",
    "Saurashtra",
    "Sharada",
    "Shavian",
    "Siddham",
    "SignWriting",
    "Sinhala",
    "Sogdian",
    "Sora_Sompeng",
    "Soyombo",
    "Sundanese",
    "Syloti_Nagri",
    "Syriac",
    "Tagalog",
    "Tagbanwa",
    "Tai_Le",
    "Tai_Tham",
    "Tai_Viet",
    "Takri",
    "Tamil",
    "Tangsa",
    "Tangut",
    "Telugu",
    "Thaana",
    "Thai",
    "Tibetan",
    "Tifinagh",
    "Tirhuta",
    "Toto",
    "Ugaritic",
    "Vai",
    "Vithkuqi",
    "Wancho",
    "Warang_Citi",
    "Yezidi",
    "Yi",
    "Zanabazar_Square",
];

pub(super) enum UnicodeLookup {
    /// Go rejects the name.
    Unknown,
    /// Only Go ≥ 1.25 accepts it (aliases, loose matching, `Cn`, `LC`, …): refused by us because
    /// Go versions disagree and we cannot promise Alloy's exact set.
    NewerGoOnly,
}

/// The class for a Go Unicode class name, built from regex-syntax's tables. Go's `C` lacks
/// unassigned code points (`Cn`), which the Unicode/Rust `C` includes, so it is assembled from
/// its parts.
pub(super) fn unicode_class(name: &str) -> Result<ClassUnicode, UnicodeLookup> {
    if name == "Any" {
        return Ok(ClassUnicode::new([ClassUnicodeRange::new('\0', char::MAX)]));
    }
    let parts: Vec<&str> = if name == "C" {
        vec!["Cc", "Cf", "Co", "Cs"]
    } else if GO_CATEGORIES.contains(&name) || GO_SCRIPTS.contains(&name) {
        vec![name]
    } else if looks_like_newer_go_name(name) {
        return Err(UnicodeLookup::NewerGoOnly);
    } else {
        return Err(UnicodeLookup::Unknown);
    };
    let mut out = ClassUnicode::empty();
    for part in parts {
        out.union(&rust_unicode_class(part).ok_or(UnicodeLookup::Unknown)?);
    }
    Ok(out)
}

/// The class of a Go category or script name (empty if unknown); used by the template
/// expander for Go's `unicode.IsLetter` / `IsDigit`.
pub(crate) fn category_class(name: &str) -> ClassUnicode {
    unicode_class(name).unwrap_or_else(|_| ClassUnicode::empty())
}

/// Names Go ≥ 1.25 accepts beyond the exact category/script keys: any spelling that matches a
/// category or script case-insensitively ignoring `_`, `-` and spaces, plus the long category
/// aliases and a few extra properties.
fn looks_like_newer_go_name(name: &str) -> bool {
    let loose = |s: &str| {
        s.chars()
            .filter(|c| !matches!(c, '_' | '-' | ' '))
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let n = loose(name);
    if n.is_empty() {
        return false;
    }
    const EXTRA: &[&str] = &[
        "cn",
        "lc",
        "ascii",
        "assigned",
        "letter",
        "casedletter",
        "uppercaseletter",
        "lowercaseletter",
        "titlecaseletter",
        "modifierletter",
        "otherletter",
        "mark",
        "spacingmark",
        "enclosingmark",
        "nonspacingmark",
        "number",
        "decimalnumber",
        "letternumber",
        "othernumber",
        "punctuation",
        "connectorpunctuation",
        "dashpunctuation",
        "closepunctuation",
        "finalpunctuation",
        "initialpunctuation",
        "otherpunctuation",
        "openpunctuation",
        "symbol",
        "currencysymbol",
        "modifiersymbol",
        "mathsymbol",
        "othersymbol",
        "separator",
        "lineseparator",
        "paragraphseparator",
        "spaceseparator",
        "other",
        "control",
        "format",
        "privateuse",
        "surrogate",
        "unassigned",
    ];
    EXTRA.contains(&n.as_str())
        || GO_CATEGORIES
            .iter()
            .chain(GO_SCRIPTS)
            .any(|k| loose(k) == n)
}

/// The class regex-syntax has for a Unicode general category or script name.
fn rust_unicode_class(name: &str) -> Option<ClassUnicode> {
    static CACHE: OnceLock<std::sync::Mutex<std::collections::HashMap<String, ClassUnicode>>> =
        OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Ok(map) = cache.lock()
        && let Some(c) = map.get(name)
    {
        return Some(c.clone());
    }
    if name == "Cs" {
        // Surrogates: not scalar values, so they never occur in a `str` (nor in valid UTF-8
        // for Go), and regex-syntax has no usable class for them.
        return Some(ClassUnicode::empty());
    }
    // Scripts are asked for explicitly (`sc=`) so a script name can never be taken for a
    // property or category of the same loose spelling; categories with `gc=`.
    let query = if GO_CATEGORIES.contains(&name) {
        format!(r"\p{{gc={name}}}")
    } else {
        format!(r"\p{{sc={name}}}")
    };
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(&query)
        .ok()?;
    let class = match hir.kind() {
        hir::HirKind::Class(Class::Unicode(c)) => c.clone(),
        // An empty class (Cs: surrogates are not scalar values) compiles to a fail node.
        _ => ClassUnicode::empty(),
    };
    if let Ok(mut map) = cache.lock() {
        map.insert(name.to_owned(), class.clone());
    }
    Some(class)
}
