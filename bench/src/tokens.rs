//! What an answer costs an agent in tokens: the tokens of the search tool's text up to and
//! including the first relevant result, and the share of the relevant files an agent has
//! read within 500 and 2,000 tokens (the figures semble publishes). Tokens are estimated as
//! the shim's budget does: bytes / 4, rounded up.

/// The cost of one answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// Tokens up to the end of the first relevant result, if any result is relevant.
    pub to_first: Option<usize>,
    /// Share of the relevant files whose result ends within 500 tokens.
    pub recall_500: f64,
    /// Share of the relevant files whose result ends within 2,000 tokens.
    pub recall_2000: f64,
}

/// One result of an answer: the `path:start-end` header the text shows it under, and its
/// path as the benchmark's targets spell it.
pub struct Shown {
    pub header: String,
    pub path: String,
}

fn tokens(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// The cost of `text`, whose results are `shown` in order, for `targets`; `is_target` says
/// whether a path is a target.
pub fn cost(
    text: &str,
    shown: &[Shown],
    targets: &[String],
    is_target: impl Fn(&str, &str) -> bool,
) -> Cost {
    // Each result's block runs from its header to the next result's header.
    let mut starts = Vec::with_capacity(shown.len());
    let mut cursor = 0;
    for result in shown {
        let at = text[cursor..]
            .find(&result.header)
            .map_or(text.len(), |i| cursor + i);
        starts.push(at);
        cursor = at.min(text.len());
    }
    let ends: Vec<usize> = (0..shown.len())
        .map(|i| starts.get(i + 1).copied().unwrap_or(text.len()))
        .collect();
    let mut to_first = None;
    let mut found: Vec<(&str, usize)> = Vec::new();
    for (result, end) in shown.iter().zip(&ends) {
        for target in targets.iter().filter(|t| is_target(&result.path, t)) {
            to_first.get_or_insert(tokens(*end));
            if !found.iter().any(|(t, _)| t == target) {
                found.push((target, tokens(*end)));
            }
        }
    }
    let within = |budget: usize| {
        if targets.is_empty() {
            return 0.0;
        }
        found.iter().filter(|(_, t)| *t <= budget).count() as f64 / targets.len() as f64
    };
    Cost {
        to_first,
        recall_500: within(500),
        recall_2000: within(2000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_runs_to_the_end_of_the_first_relevant_result() {
        let text = format!(
            "2 of 2 results for q:\n\na.rs:1-2 f score 1.00\n{}\nb.rs:3-4 g score 0.50\n{}",
            "x".repeat(1990),
            "y".repeat(4000)
        );
        let shown = [
            Shown {
                header: "a.rs:1-2".into(),
                path: "a.rs".into(),
            },
            Shown {
                header: "b.rs:3-4".into(),
                path: "b.rs".into(),
            },
        ];
        let targets = ["b.rs".to_string(), "c.rs".to_string()];
        let got = cost(&text, &shown, &targets, |p, t| p == t);
        assert_eq!(got.to_first, Some(text.len().div_ceil(4)));
        assert_eq!(got.recall_500, 0.0);
        assert_eq!(got.recall_2000, 0.5);
        let first = cost(&text, &shown, &["a.rs".to_string()], |p, t| p == t);
        assert!(first.to_first.unwrap() < 520, "{first:?}");
        assert_eq!(first.recall_500, 0.0);
    }
}
