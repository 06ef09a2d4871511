//! Statements: written once with named parameters, their text built once
//! per dialect, their arguments a struct the compiler checks.

use std::sync::OnceLock;

use parley_domain::store::{StoreError, StoreResult};

use super::arg::{Bound, MAX_PARAMS, Param};
use super::{Dialect, Ty};

/// One declared parameter: its name and what it binds. Most bind one
/// value, named `:name` in the text; a value of several parts (a
/// conversation scope) binds each under its part's own name.
#[derive(Debug)]
pub struct Decl {
    name: &'static str,
    types: &'static [Ty],
    parts: Option<&'static [&'static str]>,
}

impl Decl {
    pub const fn of<T: Param + ?Sized>(name: &'static str) -> Self {
        // Each name the text uses is one value of one type: a parameter of
        // several parts names as many as it binds.
        let names = match T::PARTS {
            Some(parts) => parts.len(),
            None => 1,
        };
        assert!(names == T::TYPES.len(), "a parameter's parts and types differ in number");
        Self { name, types: T::TYPES, parts: T::PARTS }
    }

    /// The names the text uses for this parameter's values, in binding
    /// order.
    fn names(&self) -> impl Iterator<Item = &'static str> {
        let parts = self.parts.unwrap_or(std::slice::from_ref(&self.name));
        parts.iter().copied()
    }
}

/// A statement whose text may depend on the dialect. Its text is built
/// the first time a connection of that dialect uses it and kept for the
/// life of the process, so shared fragments (column lists, the scope
/// rule) cost nothing per call.
///
/// Its parameters are declared by name and type: the text names them
/// (`:tenant`), the dialect numbers them (`?1`, `$1`) in declared order,
/// and PostgreSQL prepares the statement with their types (it cannot
/// infer one in `:site IS NULL` or in an `INSERT … SELECT :tenant`). The
/// arguments are the fields of the struct of the same name (see
/// [`statements!`]), so a swapped or mistyped argument does not compile.
pub struct Stmt {
    pub name: &'static str,
    decls: &'static [Decl],
    build: fn(Dialect) -> String,
    texts: [OnceLock<Result<String, String>>; 2],
    /// When it is planned (see [`Plan`]).
    pub plan: Plan,
}

/// When a statement's plan is made. Most statements are planned once,
/// whatever their arguments (PostgreSQL's connections set
/// `force_generic_plan`, and SQLite plans a statement when it prepares
/// it). A few reads over a tenant's whole history are not written for a
/// plan that holds for every argument: a page's size decides whether its
/// details are joined row by row or by hashing the table, and so does a
/// search window's. PostgreSQL plans those with the values of each run;
/// SQLite's planner never sees values, and the statements are written to
/// suit it as they stand. A write held back for the unit's next round
/// trip (`postgres::conn`) is planned once whatever it declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    Once,
    EachRun,
}

impl Plan {
    /// The plan a statement declares (`planned …` in [`statements!`]),
    /// once by default.
    pub const fn declared(list: &[Plan]) -> Plan {
        match list {
            [plan, ..] => *plan,
            [] => Plan::Once,
        }
    }
}

impl Stmt {
    /// Refuses, at compile time, a statement with more parameters than
    /// [`Bound`] holds.
    pub const fn new(name: &'static str, decls: &'static [Decl], build: fn(Dialect) -> String) -> Self {
        let mut count = 0;
        let mut i = 0;
        while i < decls.len() {
            count += decls[i].types.len();
            i += 1;
        }
        assert!(count <= MAX_PARAMS, "a statement with more parameters than MAX_PARAMS");
        Self { name, decls, build, texts: [OnceLock::new(), OnceLock::new()], plan: Plan::Once }
    }

    /// The same statement, planned as `plan` says.
    pub const fn planned(mut self, plan: Plan) -> Self {
        self.plan = plan;
        self
    }

    /// The parameters' types, in binding order.
    pub fn types(&self) -> impl Iterator<Item = Ty> + '_ {
        self.decls.iter().flat_map(|d| d.types.iter().copied())
    }

    /// The text for `dialect`, its parameters numbered. A text that names
    /// a parameter it does not declare (or leaves one unused) is refused
    /// here, and the tests build every statement's text for both dialects.
    pub fn text(&'static self, dialect: Dialect) -> StoreResult<&'static str> {
        self.texts[dialect.index()]
            .get_or_init(|| number(&(self.build)(dialect), self.decls, dialect))
            .as_deref()
            .map_err(|e| StoreError::Internal(format!("statement {}: {e}", self.name)))
    }
}

/// `sql` with each `:name` replaced by the dialect's placeholder of that
/// parameter's position. Quoted text and `::` casts are left alone.
/// Anything else that a database could read as a parameter (`?`, `$`,
/// `@`) and comments (which could hide a name, or a quote) are refused:
/// statements here have neither.
fn number(sql: &str, decls: &[Decl], dialect: Dialect) -> Result<String, String> {
    let names: Vec<&str> = decls.iter().flat_map(Decl::names).collect();
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(format!("parameter :{name} declared twice"));
        }
    }
    let mut used = vec![false; names.len()];
    let mut out = String::with_capacity(sql.len());
    let mut quote = None;
    let mut chars = sql.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, ':') if chars.peek().is_some_and(|(_, n)| *n == ':') => {
                out.push(':');
                chars.next();
            }
            (None, ':') => {
                let start = at + 1;
                let mut end = start;
                while let Some((i, n)) = chars.peek().copied()
                    && (n.is_ascii_alphanumeric() || n == '_')
                {
                    end = i + 1;
                    chars.next();
                }
                let name = &sql[start..end];
                let position = names.iter().position(|n| *n == name).ok_or_else(|| format!("undeclared parameter :{name}"))?;
                used[position] = true;
                out.push_str(&dialect.placeholder(position + 1));
                continue;
            }
            // PostgreSQL's full-text match operator, which it does not
            // read as a parameter (`Dialect::message_matches`).
            (None, '@') if dialect == Dialect::Postgres && chars.peek().is_some_and(|(_, n)| *n == '@') => {
                out.push_str("@@");
                chars.next();
                continue;
            }
            (None, '?' | '$' | '@') => return Err(format!("{c} outside quotes: parameters are named (:name)")),
            (None, '-') if chars.peek().is_some_and(|(_, n)| *n == '-') => return Err("a comment in a statement".into()),
            (None, '/') if chars.peek().is_some_and(|(_, n)| *n == '*') => return Err("a comment in a statement".into()),
            _ => {}
        }
        out.push(c);
    }
    match names.iter().zip(&used).find(|(_, used)| !**used) {
        Some((name, _)) => Err(format!("parameter :{name} declared but not used")),
        None => Ok(out),
    }
}

/// The arguments of one statement: the struct [`statements!`] declares
/// with it.
pub trait Params {
    fn stmt(&self) -> &'static Stmt;
    fn bind<'a>(&'a self, to: &mut Bound<'a>);
}

/// A statement declared with a variant that locks the rows it reads
/// (`locked NAME` in [`statements!`]): only these can be run through
/// `Tx::locking`, so a read meant to lock cannot silently not lock.
pub trait Lockable: Params {
    fn locked(&self) -> &'static Stmt;
}

/// Declares an aggregate's statements and the list of them all (`ALL`),
/// which the tests prepare on every backend. Each statement is a static
/// [`Stmt`] and a struct of the same name holding its arguments:
///
/// ```ignore
/// statements! {
///     /// Why it is written this way.
///     OPERATOR(tenant: TenantId, id: OperatorId) => |_| format!("SELECT {OPERATOR_COLS} FROM operators o WHERE o.tenant_id = :tenant AND o.id = :id"),
///     BY_EMAIL<'a>(email: &'a str) locked BY_EMAIL_LOCKED => |_| "SELECT … WHERE email = :email".into(),
/// }
/// // …
/// tx.one(OPERATOR { tenant, id }, operator)
/// ```
///
/// A struct that borrows declares its lifetime (`<'a>`); `locked NAME`
/// declares the same statement with its rows locked, for write units;
/// `planned EachRun` has it planned with each run's values ([`Plan`]).
macro_rules! statements {
    (@lockable $name:ident ($($lt:lifetime)?) $locked:ident) => {
        impl $(<$lt>)? $crate::sql::Lockable for $name $(<$lt>)? {
            fn locked(&self) -> &'static $crate::sql::Stmt {
                &$locked
            }
        }
    };
    (@lockable $name:ident ($($lt:lifetime)?)) => {};
    ($($(#[$doc:meta])* $name:ident $(<$lt:lifetime>)? ( $($p:ident : $ty:ty),* $(,)? ) $(locked $locked:ident)? $(planned $plan:ident)? => $build:expr,)*) => {
        $(
            $(#[$doc])*
            #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
            pub(crate) struct $name $(<$lt>)? { $(pub(crate) $p: $ty),* }

            impl $(<$lt>)? $name $(<$lt>)? {
                const DECLS: &'static [$crate::sql::Decl] = &[$($crate::sql::Decl::of::<$ty>(stringify!($p))),*];
                const PLAN: $crate::sql::Plan = $crate::sql::Plan::declared(&[$($crate::sql::Plan::$plan)?]);
            }

            $(#[$doc])*
            #[allow(non_upper_case_globals)]
            pub(crate) static $name: $crate::sql::Stmt =
                $crate::sql::Stmt::new(stringify!($name), $name::DECLS, $build).planned($name::PLAN);

            $(
                #[allow(non_upper_case_globals)]
                pub(crate) static $locked: $crate::sql::Stmt =
                    $crate::sql::Stmt::new(stringify!($locked), $name::DECLS, |d| d.locked(($build)(d))).planned($name::PLAN);
            )?

            $crate::sql::statements!(@lockable $name ($($lt)?) $($locked)?);

            impl $(<$lt>)? $crate::sql::Params for $name $(<$lt>)? {
                fn stmt(&self) -> &'static $crate::sql::Stmt {
                    &$name
                }
                #[allow(unused_variables)]
                fn bind<'b>(&'b self, to: &mut $crate::sql::Bound<'b>) {
                    $($crate::sql::Param::bind(&self.$p, to);)*
                }
            }
        )*
        /// Every statement of this file.
        pub(crate) static ALL: &[&$crate::sql::Stmt] = &[$(&$name, $(&$locked,)?)*];
    };
}
pub(crate) use statements;

#[cfg(test)]
mod tests {
    use super::*;

    fn decls() -> &'static [Decl] {
        const DECLS: &[Decl] = &[Decl::of::<i64>("tenant"), Decl::of::<Option<&str>>("site_name")];
        DECLS
    }

    #[test]
    fn names_become_the_dialects_numbers() {
        let sql = "SELECT ':tenant', x::text FROM t WHERE a = :tenant AND b = :site_name OR c = :tenant";
        assert_eq!(number(sql, decls(), Dialect::Sqlite).unwrap(), "SELECT ':tenant', x::text FROM t WHERE a = ?1 AND b = ?2 OR c = ?1");
        assert_eq!(number(sql, decls(), Dialect::Postgres).unwrap(), "SELECT ':tenant', x::text FROM t WHERE a = $1 AND b = $2 OR c = $1");
    }

    #[test]
    fn a_wrong_name_is_refused() {
        assert!(number("SELECT :tenant, :site", decls(), Dialect::Sqlite).unwrap_err().contains(":site"));
        assert!(number("SELECT :tenant", decls(), Dialect::Sqlite).unwrap_err().contains("not used"));
        assert!(number("SELECT :tenant, :site_name, ?3", decls(), Dialect::Sqlite).unwrap_err().contains("named"));
        assert!(number("SELECT :tenant, :site_name, $1", decls(), Dialect::Sqlite).unwrap_err().contains("named"));
        assert!(number("SELECT :tenant, :site_name, @x", decls(), Dialect::Sqlite).unwrap_err().contains("named"));
        assert_eq!(number("SELECT :tenant @@ :site_name", decls(), Dialect::Postgres).unwrap(), "SELECT $1 @@ $2", "an operator");
        assert!(number("SELECT :tenant @@ :site_name", decls(), Dialect::Sqlite).unwrap_err().contains("named"), "not SQLite's");
        assert!(number("SELECT :tenant -- :site_name", decls(), Dialect::Sqlite).unwrap_err().contains("comment"));
        assert!(number("SELECT :tenant /* :site_name */", decls(), Dialect::Sqlite).unwrap_err().contains("comment"));
        assert_eq!(
            number("SELECT \"a:b\", :tenant, :site_name, 1 - 2", decls(), Dialect::Sqlite).unwrap(),
            "SELECT \"a:b\", ?1, ?2, 1 - 2"
        );
        let twice: &[Decl] = &[Decl::of::<i64>("a"), Decl::of::<i64>("a")];
        assert!(number("SELECT :a", twice, Dialect::Sqlite).unwrap_err().contains("twice"));
    }
}
