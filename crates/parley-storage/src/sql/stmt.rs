//! Statements: written once, their text built once per dialect.

use std::sync::OnceLock;

use parley_domain::store::{StoreError, StoreResult};

use super::{Arg, Dialect, Ty};

/// A statement whose text may depend on the dialect. Its text is built
/// the first time a connection of that dialect uses it and kept for the
/// life of the process, so shared fragments (column lists, the scope
/// rule) cost nothing per call.
///
/// Its parameters' types are declared: PostgreSQL prepares it with them
/// (it cannot infer `?1` in `?1 IS NULL` or in an `INSERT … SELECT ?1`),
/// and every call checks its arguments against them on both databases,
/// so a mismatch fails the SQLite tests too.
pub struct Stmt {
    pub name: &'static str,
    pub params: &'static [Ty],
    build: fn(Dialect) -> String,
    texts: [OnceLock<String>; 2],
}

impl Stmt {
    pub const fn new(name: &'static str, params: &'static [Ty], build: fn(Dialect) -> String) -> Self {
        Self { name, params, build, texts: [OnceLock::new(), OnceLock::new()] }
    }

    /// Refuses arguments that do not match the declared parameters.
    pub fn check(&self, args: &[Arg<'_>]) -> StoreResult<()> {
        let fits = args.len() == self.params.len() && args.iter().zip(self.params).all(|(a, t)| a.ty() == *t);
        if fits {
            Ok(())
        } else {
            let got: Vec<Ty> = args.iter().map(|a| a.ty()).collect();
            Err(StoreError::Internal(format!("statement {}: parameters {:?} bound as {got:?}", self.name, self.params)))
        }
    }

    pub fn text(&'static self, dialect: Dialect) -> &'static str {
        self.texts[dialect.index()].get_or_init(|| dialect.parameters((self.build)(dialect)))
    }
}

/// Declares an aggregate's statements and the list of them all (`ALL`),
/// which the tests prepare on every backend:
///
/// ```ignore
/// statements! {
///     TENANT_BY_ID[Int](_d) => format!("SELECT {TENANT_COLS} FROM tenants t WHERE t.id = ?1"),
/// }
/// ```
macro_rules! statements {
    ($($(#[$doc:meta])* $name:ident [$($ty:ident),*] ($d:pat) => $build:expr,)*) => {
        $(
            $(#[$doc])*
            pub(crate) static $name: $crate::sql::Stmt =
                $crate::sql::Stmt::new(stringify!($name), &[$($crate::sql::Ty::$ty),*], |$d: $crate::sql::Dialect| -> String { $build });
        )*
        /// Every statement of this file.
        pub(crate) static ALL: &[&$crate::sql::Stmt] = &[$(&$name),*];
    };
}
pub(crate) use statements;
