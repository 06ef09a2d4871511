//! The statement seam over a PostgreSQL connection.

use std::collections::HashMap;
use std::error::Error;

use bytes::BytesMut;
use parley_domain::store::{StoreError, StoreResult};
use postgres::types::{IsNull, ToSql, Type};
use postgres::{Client, Statement};

use super::error::map;
use crate::sql::{Arg, Conn, Dialect, Row, Stmt, Ty};

/// One connection with the statements it has prepared.
pub(super) struct PgConn {
    pub(super) client: Client,
    /// Prepared statements by the address of their `Stmt` (a static), so
    /// the lookup hashes a pointer, not the SQL text.
    prepared: HashMap<usize, Statement>,
    /// Set when a statement failed inside the current transaction: the
    /// database has aborted it, and a COMMIT would silently roll back.
    pub(super) failed: bool,
}

impl PgConn {
    pub(super) fn new(client: Client) -> Self {
        Self { client, prepared: HashMap::new(), failed: false }
    }

    fn statement(&mut self, stmt: &'static Stmt) -> StoreResult<Statement> {
        let key = stmt as *const Stmt as usize;
        if let Some(s) = self.prepared.get(&key) {
            return Ok(s.clone());
        }
        let types: Vec<Type> = stmt.params.iter().map(|t| pg_type(*t)).collect();
        let prepared = self.client.prepare_typed(stmt.text(Dialect::Postgres), &types).map_err(|e| self.fail(e))?;
        self.prepared.insert(key, prepared.clone());
        Ok(prepared)
    }

    fn fail(&mut self, e: postgres::Error) -> StoreError {
        self.failed = true;
        map(e)
    }
}

fn pg_type(t: Ty) -> Type {
    match t {
        Ty::Int => Type::INT8,
        Ty::Text => Type::TEXT,
        Ty::Bool => Type::BOOL,
        Ty::Bytes => Type::BYTEA,
    }
}

impl ToSql for Arg<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            Arg::Int(v) => v.to_sql(ty, out),
            Arg::Text(v) => v.to_sql(ty, out),
            Arg::Bool(v) => v.to_sql(ty, out),
            Arg::Bytes(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        [Type::INT8, Type::TEXT, Type::BOOL, Type::BYTEA].contains(ty)
    }

    /// Statements are prepared with the types their arguments are checked
    /// against, so a mismatch here is a bug worth a clear message.
    fn to_sql_checked(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        if pg_type(self.ty()) != *ty {
            return Err(format!("a {:?} argument for a parameter of type {ty}", self.ty()).into());
        }
        self.to_sql(ty, out)
    }
}

impl Conn for PgConn {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn query(&mut self, stmt: &'static Stmt, args: &[Arg<'_>], each: &mut dyn FnMut(&dyn Row) -> StoreResult<bool>) -> StoreResult<()> {
        let prepared = self.statement(stmt)?;
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as &(dyn ToSql + Sync)).collect();
        let rows = self.client.query(&prepared, &params).map_err(|e| self.fail(e))?;
        for row in &rows {
            if !each(&PgRow(row))? {
                break;
            }
        }
        Ok(())
    }

    fn execute(&mut self, stmt: &'static Stmt, args: &[Arg<'_>]) -> StoreResult<u64> {
        let prepared = self.statement(stmt)?;
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as &(dyn ToSql + Sync)).collect();
        self.client.execute(&prepared, &params).map_err(|e| self.fail(e))
    }

    fn prepare(&mut self, stmt: &'static Stmt) -> StoreResult<()> {
        self.statement(stmt).map(|_| ())
    }
}

struct PgRow<'a>(&'a postgres::Row);

impl PgRow<'_> {
    fn get<'r, T: postgres::types::FromSql<'r>>(&'r self, col: &str) -> StoreResult<Option<T>> {
        self.0.try_get::<_, Option<T>>(col).map_err(|e| StoreError::Internal(format!("column {col}: {e}")))
    }
}

impl Row for PgRow<'_> {
    fn int(&self, col: &str) -> StoreResult<Option<i64>> {
        self.get(col)
    }

    fn text(&self, col: &str) -> StoreResult<Option<String>> {
        self.get(col)
    }

    fn boolean(&self, col: &str) -> StoreResult<Option<bool>> {
        self.get(col)
    }

    fn bytes(&self, col: &str) -> StoreResult<Option<Vec<u8>>> {
        self.get(col)
    }
}
