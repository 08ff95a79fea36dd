//! "Did you mean …?": the known name closest to a mistyped one, by edit distance (an
//! insertion, a deletion, a substitution or two neighbours swapped each count one), when
//! it is close enough to be a typo rather than another word.

/// ` (did you mean `x`?)` for the candidate closest to `word`, or nothing when none is
/// close enough.
pub fn did_you_mean(word: &str, candidates: &[&str]) -> String {
    match closest(word, candidates) {
        Some(c) => format!(" (did you mean `{c}`?)"),
        None => String::new(),
    }
}

/// The candidate closest to `word` within a third of the longer one's length (at least
/// one edit); the first listed of equally close ones.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let word_lower = word.to_lowercase();
    candidates
        .iter()
        .map(|c| (distance(&word_lower, &c.to_lowercase()), *c))
        .filter(|(d, c)| {
            let longer = word.chars().count().max(c.chars().count());
            word != *c && *d <= (longer / 3).max(1)
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Optimal string alignment distance: Levenshtein's plus the swap of two neighbours.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // rows[i][j]: the distance between a[..i] and b[..j].
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: &[&str] = &[
        "prefix",
        "shell",
        "scrollback_lines",
        "sidebar",
        "sidebar_width",
    ];

    #[test]
    fn typos_find_the_key_meant() {
        assert_eq!(closest("prefx", KEYS), Some("prefix"));
        assert_eq!(closest("scrollback_line", KEYS), Some("scrollback_lines"));
        assert_eq!(closest("sidebar_widht", KEYS), Some("sidebar_width"));
        assert_eq!(closest("Shell", KEYS), Some("shell"));
        assert_eq!(closest("sidebr", KEYS), Some("sidebar"));
        let actions = ["split_right", "split_down", "zoom"];
        assert_eq!(closest("splt_rihgt", &actions), Some("split_right"));
    }

    #[test]
    fn other_words_and_exact_names_suggest_nothing() {
        assert_eq!(closest("colour", KEYS), None);
        assert_eq!(closest("x", KEYS), None);
        assert_eq!(closest("shell", KEYS), None);
        assert_eq!(did_you_mean("bogus", KEYS), "");
        assert_eq!(did_you_mean("prefx", KEYS), " (did you mean `prefix`?)");
    }

    #[test]
    fn distance_counts_each_edit_once() {
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("abc", "abc"), 0);
        assert_eq!(distance("abc", "acb"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
