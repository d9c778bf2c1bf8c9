//! Flink's `TupleSerializer` (`Tuple1` to `Tuple25`; here up to 12 fields, as Rust tuples):
//! each field with its serializer, in order, with no marker (Flink's tuples hold no nulls).

use typeinfo::{DataInputView, DataOutputView, Result, SerializerSnapshot, TypeSerializer};

use crate::snapshot;

/// Flink's `TupleN` as a Rust tuple: `S` is the tuple of the fields' serializers.
///
/// # Examples
///
/// ```
/// use typeinfo::to_bytes;
/// use typeinfo_flink_compat::{IntSerializer, StringSerializer, TupleSerializer};
///
/// # fn main() -> typeinfo::Result<()> {
/// let tuple2 = TupleSerializer((StringSerializer, IntSerializer));
/// assert_eq!(to_bytes(&tuple2, &("a".to_owned(), 1))?, [2, b'a', 0, 0, 0, 1]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TupleSerializer<S>(pub S);

macro_rules! tuples {
    ($($n:literal => ($($T:ident $S:ident $i:tt),+);)*) => {$(
        impl<$($T: 'static,)+ $($S: TypeSerializer<$T>,)+> TypeSerializer<($($T,)+)>
            for TupleSerializer<($($S,)+)>
        {
            fn serialize(&self, value: &($($T,)+), out: &mut DataOutputView) -> Result<()> {
                $(self.0.$i.serialize(&value.$i, out)?;)+
                Ok(())
            }
            fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<($($T,)+)> {
                Ok(($(self.0.$i.deserialize(input)?,)+))
            }
            fn copy(&self, value: &($($T,)+)) -> ($($T,)+) {
                ($(self.0.$i.copy(&value.$i),)+)
            }
            fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
                $(self.0.$i.skip(input)?;)+
                Ok(())
            }
            fn fixed_length(&self) -> Option<usize> {
                Some(0 $(+ self.0.$i.fixed_length()?)+)
            }
            fn snapshot(&self) -> SerializerSnapshot {
                snapshot::of(
                    concat!("TupleSerializer(Tuple", $n, ")"),
                    vec![$(self.0.$i.snapshot()),+],
                )
            }
        }

        impl<$($T: 'static,)+ $($S: TypeSerializer<$T>,)+> TypeSerializer<crate::Row<($(Option<$T>,)+)>>
            for crate::RowSerializer<($($S,)+)>
        {
            fn serialize(&self, value: &crate::Row<($(Option<$T>,)+)>, out: &mut DataOutputView) -> Result<()> {
                let nulls = [$(value.fields.$i.is_none()),+];
                crate::layout::row::write_mask(out, value.kind, &nulls);
                $(if let Some(v) = &value.fields.$i {
                    self.0.$i.serialize(v, out)?;
                })+
                Ok(())
            }
            fn deserialize(&self, input: &mut DataInputView<'_>) -> Result<crate::Row<($(Option<$T>,)+)>> {
                let mut nulls = [false; $n];
                let kind = crate::layout::row::read_mask(input, &mut nulls)?;
                let fields = ($(
                    if nulls[$i] { None } else { Some(self.0.$i.deserialize(input)?) },
                )+);
                Ok(crate::Row { kind, fields })
            }
            fn copy(&self, value: &crate::Row<($(Option<$T>,)+)>) -> crate::Row<($(Option<$T>,)+)> {
                crate::Row {
                    kind: value.kind,
                    fields: ($(value.fields.$i.as_ref().map(|v| self.0.$i.copy(v)),)+),
                }
            }
            fn skip(&self, input: &mut DataInputView<'_>) -> Result<()> {
                let mut nulls = [false; $n];
                crate::layout::row::read_mask(input, &mut nulls)?;
                $(if !nulls[$i] {
                    self.0.$i.skip(input)?;
                })+
                Ok(())
            }
            fn snapshot(&self) -> SerializerSnapshot {
                snapshot::of("RowSerializer", vec![$(self.0.$i.snapshot()),+])
            }
        }
    )*};
}

tuples! {
    1 => (T0 S0 0);
    2 => (T0 S0 0, T1 S1 1);
    3 => (T0 S0 0, T1 S1 1, T2 S2 2);
    4 => (T0 S0 0, T1 S1 1, T2 S2 2, T3 S3 3);
    5 => (T0 S0 0, T1 S1 1, T2 S2 2, T3 S3 3, T4 S4 4);
    6 => (T0 S0 0, T1 S1 1, T2 S2 2, T3 S3 3, T4 S4 4, T5 S5 5);
    7 => (T0 S0 0, T1 S1 1, T2 S2 2, T3 S3 3, T4 S4 4, T5 S5 5, T6 S6 6);
    8 => (T0 S0 0, T1 S1 1, T2 S2 2, T3 S3 3, T4 S4 4, T5 S5 5, T6 S6 6, T7 S7 7);
    9 => (T0 S0 0, T1 S1 1, T2 S2 2, T3 S3 3, T4 S4 4, T5 S5 5, T6 S6 6, T7 S7 7, T8 S8 8);
    10 => (T0 S0 0, T1 S1 1, T2 S2 2, T3 S3 3, T4 S4 4, T5 S5 5, T6 S6 6, T7 S7 7, T8 S8 8, T9 S9 9);
    11 => (T0 S0 0, T1 S1 1, T2 S2 2, T3 S3 3, T4 S4 4, T5 S5 5, T6 S6 6, T7 S7 7, T8 S8 8, T9 S9 9, T10 S10 10);
    12 => (T0 S0 0, T1 S1 1, T2 S2 2, T3 S3 3, T4 S4 4, T5 S5 5, T6 S6 6, T7 S7 7, T8 S8 8, T9 S9 9, T10 S10 10, T11 S11 11);
}
