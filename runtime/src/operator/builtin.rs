//! The built-in stateless operators: `map`, `flat_map`, `filter`, and the reader of a side output.

use std::marker::PhantomData;
use std::sync::Arc;

use typeinfo::TypeSerializer;

use crate::error::Result;
use crate::operator::context::OutputTag;
use crate::operator::contract::{Operator, Outputs, SideRecord};
use crate::types::Data;

pub(crate) struct MapOp<F>(pub(crate) Arc<F>);

impl<I: 'static, O: 'static, F: Fn(I) -> O + Send + Sync + 'static> Operator<I, O> for MapOp<F> {
    #[inline]
    fn process(&mut self, ts: i64, value: I, out: &mut Outputs<O, I>) -> Result<()> {
        out.main.collect(ts, (self.0)(value));
        Ok(())
    }
}

pub(crate) struct FlatMapOp<F, It>(pub(crate) Arc<F>, pub(crate) PhantomData<fn() -> It>);

impl<
        I: 'static,
        O: 'static,
        It: IntoIterator<Item = O> + 'static,
        F: Fn(I) -> It + Send + Sync + 'static,
    > Operator<I, O> for FlatMapOp<F, It>
{
    #[inline]
    fn process(&mut self, ts: i64, value: I, out: &mut Outputs<O, I>) -> Result<()> {
        for o in (self.0)(value) {
            out.main.collect(ts, o);
        }
        Ok(())
    }
}

pub(crate) struct FilterOp<F>(pub(crate) Arc<F>);

impl<I: 'static, F: Fn(&I) -> bool + Send + Sync + 'static> Operator<I, I> for FilterOp<F> {
    #[inline]
    fn process(&mut self, ts: i64, value: I, out: &mut Outputs<I, I>) -> Result<()> {
        if (self.0)(&value) {
            out.main.collect(ts, value);
        }
        Ok(())
    }
}

/// Reads one tag's values out of an operator's tagged side outputs.
pub(crate) struct SideOutputReader<S: Data> {
    pub(crate) tag: OutputTag<S>,
}

impl<S: Data> Clone for SideOutputReader<S> {
    fn clone(&self) -> Self {
        SideOutputReader {
            tag: self.tag.clone(),
        }
    }
}

impl<S: Data> Operator<SideRecord, S> for SideOutputReader<S> {
    fn process(
        &mut self,
        ts: i64,
        (tag, bytes): SideRecord,
        out: &mut Outputs<S, SideRecord>,
    ) -> Result<()> {
        if tag != self.tag.id() {
            return Ok(());
        }
        let serializer = self.tag.serializer().ok_or_else(|| {
            crate::error::Error::Graph(format!("side output `{}` has no serializer", self.tag.id()))
        })?;
        let mut input = typeinfo::DataInputView::new(&bytes);
        let value = serializer.deserialize(&mut input)?;
        if !input.is_empty() {
            return Err(crate::error::Error::Corrupt(format!(
                "side output `{}`: bytes after a value",
                self.tag.id()
            )));
        }
        out.main.collect(ts, value);
        Ok(())
    }
}
