//! A pasted issue's markup: what an issue tracker renders rather than shows. Links
//! (`https://user-images.githubusercontent.com/…/83331159-4eab.png`), HTML tags with their
//! attributes (`<img width="148" alt="…" src="…">`) and HTML comments (a template's hidden
//! "Thanks for submitting an issue!") are addresses, layout and boilerplate, not words of the
//! question; searched for, they name files by accident (`png` -> `util/png.py`). A link into
//! a repository's source (`…/blob/<ref>/src/_pytest/pastebin.py#L68`) names a file, and
//! stays as its path. An issue template's headings (`### Expected behavior`) are its
//! structure, and an environment report (the versions installed, a template's `OS:` and
//! `Python version:` lines, `pip list`) lists every package by name: no words of the
//! question either.

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

/// A line of an environment report: `numpy: 1.23.4`, `- Python version: 3.8.2`,
/// `OS: Linux` (a key of up to three words, then a short value).
static REPORT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:[-*]\s+)?[A-Za-z][\w.+-]*(?: [A-Za-z][\w.+-]*){0,2}\s*:\s*(.{0,80})$")
        .expect("valid pattern")
});

/// A line of a package list (`pip list`, `conda list`): a name, spaces, its
/// version (`importlib-metadata 4.8.2`). Output, never code: read inside code blocks too.
static PACKAGE_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[A-Za-z][\w.-]*\s+v?\d[\w.+-]*(?:\s+\S+)?\s*$").expect("valid pattern")
});

/// Lines in a row that make an environment report, at least.
const REPORT_LINES: usize = 4;

/// Whether a report line's value says only which version or none (`1.23.4`, `None`, `No`).
fn version_like(value: &str) -> bool {
    let value = value.trim();
    value.is_empty()
        || value.starts_with(|c: char| c.is_ascii_digit())
        || ["none", "no", "n/a", "yes", "unknown", "-"].contains(&value.to_lowercase().as_str())
}

/// A Markdown heading (`### Versions`) or a line that is one short bold phrase
/// (`**Describe the bug**`), as issue templates write their sections.
fn is_heading(line: &str) -> bool {
    let hashes = line.starts_with('#') && line.trim_start_matches('#').starts_with(' ');
    let bold = (5..50).contains(&line.len()) && line.starts_with("**") && line.ends_with("**");
    hashes || (bold && !line[2..line.len() - 2].contains("**"))
}

/// `text` without its template's headings (after the title line, outside code blocks) and
/// without its environment reports: runs of [`REPORT_LINES`] or more `key: value`
/// lines, most of whose values are versions (`xr.show_versions()`, an issue template's
/// "- OS: / - Python version: / - Sphinx version:"). Their keys are the names of every
/// package installed and name the project's files by accident (`zarr: 2.13.3` ->
/// `backends/zarr.py`); of their values, only those that are not a version stay
/// (`Sphinx extensions: sphinx.ext.napoleon`).
fn without_boilerplate(text: &str) -> Cow<'_, str> {
    let lines: Vec<&str> = text.lines().collect();
    // A fenced block is code or its output (a config file's `max-line-length: 100`), its
    // fences included: kept.
    let mut open = false;
    let fenced: Vec<bool> = (lines.iter())
        .map(|line| {
            let fence = line.trim_start().starts_with("```");
            open ^= fence;
            open || fence
        })
        .collect();
    // Each line's value if it may belong to a report (a package line's value is its
    // version).
    let report: Vec<Option<&str>> = (lines.iter().zip(&fenced))
        .map(|(line, fenced)| match REPORT_LINE.captures(line) {
            Some(c) if !fenced => Some(c.get(1).map_or("", |m| m.as_str())),
            _ => PACKAGE_LINE.is_match(line).then_some(""),
        })
        .collect();
    // What each line leaves: itself, a report's value that is no version, or nothing.
    let mut shown: Vec<Option<&str>> = lines.iter().map(|line| Some(*line)).collect();
    let mut changed = false;
    let mut start = 0;
    for run in report.chunk_by(|a, b| a.is_some() == b.is_some()) {
        let values: Vec<&str> = run.iter().flatten().copied().collect();
        let versions = values.iter().filter(|v| version_like(v)).count();
        if values.len() >= REPORT_LINES && versions * 2 >= values.len() {
            for (i, value) in (start..).zip(values) {
                shown[i] = (!version_like(value)).then_some(value);
            }
            changed = true;
        }
        start += run.len();
    }
    // Headings after the title line are the issue template's (`### Expected behavior`,
    // `**Describe the bug**`, `### Versions`): its structure, not the question.
    let title = lines.iter().position(|l| !l.trim().is_empty());
    for (i, line) in lines.iter().enumerate() {
        if !fenced[i] && Some(i) != title && is_heading(line.trim()) {
            shown[i] = None;
            changed = true;
        }
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    Cow::Owned(shown.into_iter().flatten().collect::<Vec<_>>().join("\n"))
}

/// `text` without its links, HTML tags and comments (each left as a space), a link into a
/// source tree left as the path it names, and without its template's headings and
/// environment reports ([`without_boilerplate`]); `text` itself when it has none.
pub fn without_markup(text: &str) -> Cow<'_, str> {
    match without_boilerplate(text) {
        Cow::Borrowed(text) => without_links(text),
        Cow::Owned(text) => Cow::Owned(without_links(&text).into_owned()),
    }
}

fn without_links(text: &str) -> Cow<'_, str> {
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
    fn an_environment_report_is_no_words_but_what_is_not_a_version() {
        let issue = "Autodoc drops defaults\n\n**Environment info**\n- OS: Mac\n\
            - Python version: 3.8.2\n- Sphinx version: 3.1.0dev\n\
            - Sphinx extensions: sphinx.ext.napoleon\n- Extra tools: No\n\n\
            <details>\nINSTALLED VERSIONS\ncommit: None\nzarr: 2.13.3\ndask: 2022.10.0\n\
            rasterio: 1.3.3\nOS: Linux\n</details>";
        assert_eq!(
            words(issue),
            [
                "Autodoc",
                "drops",
                "defaults",
                "Mac",
                "sphinx.ext.napoleon",
                "INSTALLED",
                "VERSIONS",
                "Linux"
            ]
        );
        // `pip list`, fenced or not.
        let packages = "Fails on 3.9\n```\n$ pip list\nPackage            Version\n\
            ------------------ -------\natomicwrites       1.4.0\nattrs              21.2.0\n\
            importlib-metadata 4.8.2\npluggy             1.0.0\n```";
        assert_eq!(
            words(packages),
            [
                "Fails",
                "on",
                "3.9",
                "```",
                "$",
                "pip",
                "list",
                "Package",
                "Version",
                "------------------",
                "-------",
                "```"
            ]
        );
        // A few such lines, or a config file in a fenced block, are the question's own.
        let config = "pylint ignores max-line-length\n```\n[FORMAT]\nmax-line-length: 100\n\
            jobs: 4\nfail-under: 9.5\nscore: 1\n```\nwhen: 2.13\nwhy: 3";
        assert_eq!(without_markup(config), config);
    }

    #[test]
    fn a_templates_headings_are_no_words_but_the_title_and_code_are() {
        let issue = "### Crash in linkcheck\n**Describe the bug**\nlinkcheck crashes\n\
            ### Expected behavior\nno crash\n```python\n# check the anchors\n\
            **kwargs\n```\n**Note: this only happens with anchors on and a redirect**";
        assert_eq!(
            words(issue),
            [
                "###",
                "Crash",
                "in",
                "linkcheck",
                "linkcheck",
                "crashes",
                "no",
                "crash",
                "```python",
                "#",
                "check",
                "the",
                "anchors",
                "**kwargs",
                "```",
                "**Note:",
                "this",
                "only",
                "happens",
                "with",
                "anchors",
                "on",
                "and",
                "a",
                "redirect**"
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
