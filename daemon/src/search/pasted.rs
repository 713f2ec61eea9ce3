//! A pasted issue's markup: what an issue tracker renders rather than shows. Links
//! (`https://user-images.githubusercontent.com/…/83331159-4eab.png`), HTML tags with their
//! attributes (`<img width="148" alt="…" src="…">`) and HTML comments (a template's hidden
//! "Thanks for submitting an issue!") are addresses, layout and boilerplate, not words of the
//! question; searched for, they name files by accident (`png` -> `util/png.py`). A link into
//! a repository's source (`…/blob/<ref>/src/_pytest/pastebin.py#L68`) names a file, and
//! stays as its path.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// An address: scheme, then everything up to a space, quote, bracket or angle bracket.
static LINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"https?://[^\s<>"'`()\[\]{}]+"#).expect("valid pattern"));

/// The path inside a link to a source tree (`/blob/main/`, `/tree/3.x/`, `/src/<ref>/`).
static SOURCE_PATH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"/(?:blob|tree|src)/[^/]+/([^#?]+)").expect("valid pattern"));

/// An HTML comment, an HTML tag with a quoted attribute (`<img src="…">`: not a generic
/// type's `<T extends Foo>`), or a bare tag of the elements issue text uses.
static MARKUP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?s)<!--.*?-->",
        r#"|<[A-Za-z][\w-]*\s[^<>]*?[\w:-]+\s*=\s*(?:"[^"]*"|'[^']*')[^<>]*>"#,
        r"|(?i)</?(?:details|summary|img|br|p|div|sub|sup|a|b|i|em|strong|code|pre|kbd|span",
        r"|table|thead|tbody|tr|td|th|ul|ol|li|h[1-6]|hr|blockquote)\s*/?>",
    ))
    .expect("valid pattern")
});

/// `text` without its links, HTML tags and comments (each left as a space), a link into a
/// source tree left as the path it names; `text` itself when it has none.
pub fn without_markup(text: &str) -> Cow<'_, str> {
    let unmarked = MARKUP.replace_all(text, " ");
    if !LINK.is_match(&unmarked) {
        return unmarked;
    }
    let unlinked = LINK.replace_all(&unmarked, |link: &regex::Captures<'_>| {
        let link = link[0].trim_end_matches(['.', ',', ';', ':', '!', '?']);
        match SOURCE_PATH.captures(link) {
            Some(path) => format!(" {} ", &path[1]),
            None => " ".to_string(),
        }
    });
    Cow::Owned(unlinked.into_owned())
}

#[cfg(test)]
mod tests {
    use super::without_markup;

    fn words(text: &str) -> Vec<String> {
        without_markup(text)
            .split_whitespace()
            .map(String::from)
            .collect()
    }

    #[test]
    fn links_tags_and_comments_are_no_words() {
        let issue = "Default value vanished\n<!-- Thanks for submitting an issue! -->\n\
            Result: <img width=\"148\" alt=\"shot\" src=\"https://user-images.example.com/1/2.png\">\n\
            see [PEP 484](https://www.python.org/dev/peps/pep-0484/) and \
            <details><summary>log</summary>trace</details>";
        assert_eq!(
            words(issue),
            [
                "Default", "value", "vanished", "Result:", "see", "[PEP", "484](", ")", "and",
                "log", "trace"
            ]
        );
    }

    #[test]
    fn a_link_into_the_source_names_its_file() {
        let text = "at https://github.com/o/r/blob/d47b9d0/src/_pytest/pastebin.py#L68-L73. and \
            https://git.example.org/docs/tree/main/doc/conf.py?plain=1, here";
        assert_eq!(
            words(text),
            [
                "at",
                "src/_pytest/pastebin.py",
                "and",
                "doc/conf.py",
                "here"
            ]
        );
    }

    #[test]
    fn code_keeps_its_angle_brackets() {
        for code in [
            "fn f() -> Vec<String>",
            "<xarray.Dataset> Dimensions: (time: 3)",
            "function f<T extends Foo>(x: T)",
            "if a < b and c > d",
        ] {
            assert_eq!(without_markup(code), code);
        }
    }
}
