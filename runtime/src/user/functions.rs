//! Ready-made aggregate functions.

use typeinfo_state::AggregateFunction;

/// Counts records.
#[derive(Debug, Clone, Copy, Default)]
pub struct Count;

impl<T> AggregateFunction<T, u64, u64> for Count {
    fn create_accumulator(&self) -> u64 {
        0
    }
    fn add(&self, _value: &T, accumulator: &mut u64) {
        *accumulator += 1;
    }
    fn get_result(&self, accumulator: &u64) -> u64 {
        *accumulator
    }
    fn merge(&self, a: u64, b: u64) -> u64 {
        a + b
    }
}

/// Counts records and sums an `i64` taken from each: the result is `(count, sum)`.
pub struct CountAndSum<F>(pub F);

impl<F> std::fmt::Debug for CountAndSum<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CountAndSum")
    }
}

impl<T, F: Fn(&T) -> i64 + Send + Sync> AggregateFunction<T, (u64, i64), (u64, i64)>
    for CountAndSum<F>
{
    fn create_accumulator(&self) -> (u64, i64) {
        (0, 0)
    }
    fn add(&self, value: &T, accumulator: &mut (u64, i64)) {
        accumulator.0 += 1;
        accumulator.1 = accumulator.1.wrapping_add((self.0)(value));
    }
    fn get_result(&self, accumulator: &(u64, i64)) -> (u64, i64) {
        *accumulator
    }
    fn merge(&self, a: (u64, i64), b: (u64, i64)) -> (u64, i64) {
        (a.0 + b.0, a.1.wrapping_add(b.1))
    }
}
