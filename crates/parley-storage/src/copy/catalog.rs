//! The tables as each database's own catalog describes them.
//!
//! Read from the catalog rather than listed here, so a table that a later
//! migration adds is copied without a change to the copy.

use std::collections::{BTreeMap, BTreeSet};

use super::value::ColumnType;

/// Tables that record the schema's own state, which each database keeps
/// for itself (the target's migrations wrote its own).
pub const BOOKKEEPING: &[&str] = &["parley_migrations"];

/// Whether a table is part of SQLite's search indexes of messages and of
/// visitors (the FTS5 tables and their shadow tables). The search index is the one place
/// the two databases differ in kind (FTS5 there, an expression index on
/// PostgreSQL): it is derived from the messages, so it is neither
/// compared nor copied, and a target builds its own as rows arrive.
pub fn is_search_table(name: &str) -> bool {
    ["messages_fts", "visitors_fts"].iter().any(|t| name == *t || name.strip_prefix(t).is_some_and(|rest| rest.starts_with('_')))
}

/// Whether an index is one of PostgreSQL's search indexes (see
/// [`is_search_table`]).
pub fn is_search_index(index: &Index) -> bool {
    index.columns.iter().any(|c| c.contains("to_tsvector"))
}

/// Tables that triggers keep from other tables (the inbox's totals,
/// from the conversations): a target's own triggers fill them as the rows
/// they follow arrive, so copying them too would count twice.
pub const DERIVED: &[&str] = &["conversation_counts"];

/// Whether a table is the database's own rather than the data's: neither
/// compared nor copied.
pub fn is_own(name: &str) -> bool {
    BOOKKEEPING.contains(&name) || DERIVED.contains(&name) || is_search_table(name)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
    /// NOT NULL, or part of the primary key.
    pub not_null: bool,
}

/// An index as both databases can state it, whatever its name: its table,
/// its columns or expressions (normalised by [`normalise`]), whether it
/// is unique, and the condition of a partial index. Primary keys are in
/// [`Table::key`], not here.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Index {
    pub table: String,
    pub columns: Vec<String>,
    pub unique: bool,
    pub predicate: Option<String>,
}

impl Index {
    /// From the text of a `CREATE INDEX` (SQLite's as written, PostgreSQL's
    /// `pg_get_indexdef`): the parenthesised list after the table (and
    /// `USING method`), and the `WHERE` condition.
    pub fn from_definition(table: &str, unique: bool, definition: &str) -> Option<Self> {
        let open = definition.find(" (").map(|i| i + 1).or_else(|| definition.find('('))?;
        let close = matching(definition, open)?;
        let columns = split_top_level(&definition[open + 1..close]).into_iter().map(|c| normalise(&c)).collect();
        let rest = definition[close + 1..].trim();
        let predicate = rest.strip_prefix("WHERE").or_else(|| rest.strip_prefix("where")).map(normalise);
        Some(Self { table: table.to_owned(), columns, unique, predicate })
    }
}

/// `(0)` as `0` where it stands alone (PostgreSQL's text of a literal),
/// not where it is a call's list (`f(0)`).
fn unwrap_numbers(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let digits = chars[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let called = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if chars[i] == '(' && digits > 0 && chars.get(i + 1 + digits) == Some(&')') && !called {
            out.extend(&chars[i + 1..i + 1 + digits]);
            i += digits + 2;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// The position of the parenthesis closing the one at `open`.
fn matching(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices().skip_while(|(i, _)| *i < open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The parts of a list separated by commas outside parentheses.
fn split_top_level(list: &str) -> Vec<String> {
    let (mut parts, mut current, mut depth) = (Vec::new(), String::new(), 0usize);
    for c in list.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts
}

/// An expression or condition as both databases' texts of it compare:
/// lower case, no white space, no casts (`::text`), no parentheses
/// around a lone number, none around the whole.
pub fn normalise(expression: &str) -> String {
    let mut text: String = expression.to_lowercase().chars().filter(|c| !c.is_whitespace()).collect();
    while let Some(at) = text.find("::") {
        let end = text[at + 2..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(text.len(), |n| at + 2 + n);
        text.replace_range(at..end, "");
    }
    text = unwrap_numbers(&text);
    while text.starts_with('(') && matching(&text, 0) == Some(text.len() - 1) {
        text = text[1..text.len() - 1].to_owned();
    }
    text
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub name: String,
    /// In the catalog's order.
    pub columns: Vec<Column>,
    /// The primary key's columns, in key order; empty when it has none.
    pub key: Vec<String>,
    /// Tables this one's foreign keys point at.
    pub parents: BTreeSet<String>,
    /// The column whose new values a sequence hands out (an identity
    /// column, or SQLite's AUTOINCREMENT key), if any.
    pub sequence: Option<String>,
}

impl Table {
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }
}

/// Every table of one database, by name.
pub type Catalog = BTreeMap<String, Table>;

/// Checks that both databases have the same tables with the same column
/// names (types may differ: that is what conversion is for), and lists
/// every difference when not.
pub fn compare(source: &Catalog, target: &Catalog) -> Result<(), String> {
    let mut problems = Vec::new();
    for name in source.keys().filter(|n| !target.contains_key(*n)) {
        problems.push(format!("table {name} is only in the source"));
    }
    for name in target.keys().filter(|n| !source.contains_key(*n)) {
        problems.push(format!("table {name} is only in the target"));
    }
    for (name, s) in source {
        let Some(t) = target.get(name) else { continue };
        for c in s.columns.iter().filter(|c| t.column(&c.name).is_none()) {
            problems.push(format!("column {name}.{} is only in the source", c.name));
        }
        for c in t.columns.iter().filter(|c| s.column(&c.name).is_none()) {
            problems.push(format!("column {name}.{} is only in the target", c.name));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
}

#[cfg(test)]
pub(crate) fn table(name: &str, columns: &[(&str, ColumnType)], parents: &[&str]) -> Table {
    Table {
        name: name.into(),
        columns: columns.iter().map(|(n, ty)| Column { name: (*n).into(), ty: *ty, not_null: false }).collect(),
        key: vec!["id".into()],
        parents: parents.iter().map(|p| (*p).to_owned()).collect(),
        sequence: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ColumnType::*;

    fn catalog(tables: &[Table]) -> Catalog {
        tables.iter().map(|t| (t.name.clone(), t.clone())).collect()
    }

    #[test]
    fn columns_are_matched_by_name_whatever_their_order_and_type() {
        let s = catalog(&[table("operators", &[("id", Integer), ("active", Integer), ("email", Text)], &[])]);
        let t = catalog(&[table("operators", &[("email", Text), ("id", Integer), ("active", Bool)], &[])]);
        assert_eq!(compare(&s, &t), Ok(()));
    }

    #[test]
    fn every_difference_is_named() {
        let s = catalog(&[table("a", &[("id", Integer), ("x", Text)], &[]), table("b", &[("id", Integer)], &[])]);
        let t = catalog(&[table("a", &[("id", Integer), ("y", Text)], &[]), table("c", &[("id", Integer)], &[])]);
        let e = compare(&s, &t).unwrap_err();
        for part in [
            "table b is only in the source",
            "table c is only in the target",
            "column a.x is only in the source",
            "column a.y is only in the target",
        ] {
            assert!(e.contains(part), "{part} in {e}");
        }
    }
}
