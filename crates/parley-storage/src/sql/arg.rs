//! Statement parameters, typed even when null.
//!
//! PostgreSQL needs each parameter's type when it prepares a statement
//! (`:site IS NULL OR c.site_id = :site` gives it no clue on its own), so
//! a null is still a null *integer* or a null *text*. SQLite ignores the
//! type. The Rust types a statement's struct may hold are the ones with a
//! [`Value`] (or, binding several, a [`Param`]) below.

use parley_domain::Timestamp;
use parley_domain::model::*;

#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    Int(Option<i64>),
    Text(Option<&'a str>),
    Bool(Option<bool>),
    Bytes(Option<&'a [u8]>),
}

/// A parameter's declared type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Int,
    Text,
    Bool,
    Bytes,
}

impl Arg<'_> {
    fn null(ty: Ty) -> Self {
        match ty {
            Ty::Int => Arg::Int(None),
            Ty::Text => Arg::Text(None),
            Ty::Bool => Arg::Bool(None),
            Ty::Bytes => Arg::Bytes(None),
        }
    }

    pub fn ty(&self) -> Ty {
        match self {
            Arg::Int(_) => Ty::Int,
            Arg::Text(_) => Ty::Text,
            Arg::Bool(_) => Ty::Bool,
            Arg::Bytes(_) => Ty::Bytes,
        }
    }
}

/// Most parameters one statement binds: enough for the widest (twelve),
/// small enough that binding needs no allocation. A statement declaring
/// more does not compile (`Stmt::new`).
pub const MAX_PARAMS: usize = 16;

/// A statement's arguments, bound in declared order on the stack.
pub struct Bound<'a> {
    args: [Arg<'a>; MAX_PARAMS],
    len: usize,
}

impl<'a> Bound<'a> {
    pub fn new() -> Self {
        Self { args: [Arg::Int(None); MAX_PARAMS], len: 0 }
    }

    fn push(&mut self, arg: Arg<'a>) {
        // `Stmt::new` proved at compile time that every statement fits.
        if let Some(slot) = self.args.get_mut(self.len) {
            *slot = arg;
            self.len += 1;
        }
    }

    pub fn as_slice(&self) -> &[Arg<'a>] {
        &self.args[..self.len.min(MAX_PARAMS)]
    }
}

/// What a statement's parameter may be: one value (any [`Value`]) or a
/// value of several parts, each bound under its own name.
pub trait Param {
    const TYPES: &'static [Ty];
    /// The names the parts take in a statement's text; `None` for one
    /// value, named after its field.
    const PARTS: Option<&'static [&'static str]> = None;
    fn bind<'a>(&'a self, to: &mut Bound<'a>);
}

/// A value bound as one parameter.
pub trait Value {
    const TY: Ty;
    fn arg(&self) -> Arg<'_>;
}

impl<T: Value> Param for T {
    const TYPES: &'static [Ty] = &[T::TY];
    fn bind<'a>(&'a self, to: &mut Bound<'a>) {
        to.push(self.arg());
    }
}

/// A value shared by several statements (an `IdList`) is lent to each.
impl<T: Value> Value for &T {
    const TY: Ty = T::TY;
    fn arg(&self) -> Arg<'_> {
        (**self).arg()
    }
}

impl<T: Value> Value for Option<T> {
    const TY: Ty = T::TY;
    fn arg(&self) -> Arg<'_> {
        self.as_ref().map_or(Arg::null(T::TY), Value::arg)
    }
}

impl Value for i64 {
    const TY: Ty = Ty::Int;
    fn arg(&self) -> Arg<'_> {
        Arg::Int(Some(*self))
    }
}

impl Value for u32 {
    const TY: Ty = Ty::Int;
    fn arg(&self) -> Arg<'_> {
        Arg::Int(Some(i64::from(*self)))
    }
}

impl Value for u16 {
    const TY: Ty = Ty::Int;
    fn arg(&self) -> Arg<'_> {
        Arg::Int(Some(i64::from(*self)))
    }
}

/// Counts and offsets beyond `i64::MAX` mean "everything".
impl Value for u64 {
    const TY: Ty = Ty::Int;
    fn arg(&self) -> Arg<'_> {
        Arg::Int(Some(i64::try_from(*self).unwrap_or(i64::MAX)))
    }
}

impl Value for bool {
    const TY: Ty = Ty::Bool;
    fn arg(&self) -> Arg<'_> {
        Arg::Bool(Some(*self))
    }
}

impl Value for &str {
    const TY: Ty = Ty::Text;
    fn arg(&self) -> Arg<'_> {
        Arg::Text(Some(self))
    }
}

impl Value for &[u8] {
    const TY: Ty = Ty::Bytes;
    fn arg(&self) -> Arg<'_> {
        Arg::Bytes(Some(self))
    }
}

impl Value for Timestamp {
    const TY: Ty = Ty::Int;
    fn arg(&self) -> Arg<'_> {
        Arg::Int(Some(self.as_millis()))
    }
}

/// A list of ids bound as one JSON parameter (see `Dialect::id_list`).
pub struct IdList(String);

impl IdList {
    pub fn new(ids: impl IntoIterator<Item = i64>) -> Self {
        let ids: Vec<String> = ids.into_iter().map(|id| id.to_string()).collect();
        Self(format!("[{}]", ids.join(",")))
    }
}

impl Value for IdList {
    const TY: Ty = Ty::Text;
    fn arg(&self) -> Arg<'_> {
        Arg::Text(Some(&self.0))
    }
}

/// The visibility rule of `ConversationScope` (`conversations::SCOPE`)
/// binds four parameters: the tenant, the site (or null), the operator
/// (or null), and whether that operator is an admin.
impl Param for ConversationScope {
    const TYPES: &'static [Ty] = &[Ty::Int, Ty::Int, Ty::Int, Ty::Bool];
    const PARTS: Option<&'static [&'static str]> = Some(&["tenant", "site", "operator", "admin"]);
    fn bind<'a>(&'a self, to: &mut Bound<'a>) {
        to.push(self.tenant.arg());
        to.push(self.site.arg());
        to.push(Arg::Int(self.operator.map(|(o, _)| o.0)));
        to.push(Arg::Bool(Some(matches!(self.operator, Some((_, Role::Admin))))));
    }
}

macro_rules! id_values {
    ($($id:ident),*) => {$(
        impl Value for $id {
            const TY: Ty = Ty::Int;
            fn arg(&self) -> Arg<'_> {
                Arg::Int(Some(self.0))
            }
        }
    )*};
}

parley_domain::for_each_id!(id_values);
