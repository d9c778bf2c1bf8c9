//! A source's side output: a reader hands the lines it cannot parse to a tagged side output
//! (`SourceOutput::output`), read with `side_output` on the source's stream, at parallelism
//! 1 and 2, streaming and batch, beside the records that parsed.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it does not expect

use std::time::Duration;

use typeinfo_runtime::{
    OutputTag, ReadStatus, RuntimeMode, Source, SourceOutput, SplitReader,
    StreamExecutionEnvironment, WatermarkStrategy,
};

/// Numbers as text, one split per vector; what does not parse goes to the side output.
#[derive(Clone)]
struct Numbers(Vec<Vec<&'static str>>, OutputTag<String>);

struct NumberReader {
    lines: Vec<&'static str>,
    next: u64,
    bad: OutputTag<String>,
}

impl SplitReader<i64> for NumberReader {
    type Position = u64;
    fn read(
        &mut self,
        out: &mut SourceOutput<'_, i64>,
        budget: usize,
    ) -> typeinfo_runtime::Result<ReadStatus> {
        for _ in 0..budget {
            let Some(line) = self.lines.get(self.next as usize) else {
                return Ok(ReadStatus::Finished);
            };
            match line.parse::<i64>() {
                Ok(n) => out.collect_with_timestamp(n, n),
                Err(_) => out.output(&self.bad, (*line).to_owned())?,
            }
            self.next += 1;
        }
        Ok(ReadStatus::More)
    }
    fn position(&self) -> u64 {
        self.next
    }
    fn seek(&mut self, position: u64) -> typeinfo_runtime::Result<()> {
        self.next = position;
        Ok(())
    }
}

impl Source<i64> for Numbers {
    type Split = u32;
    type Reader = NumberReader;
    fn splits(&self, _parallelism: usize) -> typeinfo_runtime::Result<Vec<u32>> {
        Ok((0..self.0.len() as u32).collect())
    }
    fn reader(&self, split: &u32) -> typeinfo_runtime::Result<NumberReader> {
        Ok(NumberReader {
            lines: self.0[*split as usize].clone(),
            next: 0,
            bad: self.1.clone(),
        })
    }
    fn boundedness(&self) -> typeinfo_runtime::Boundedness {
        typeinfo_runtime::Boundedness::Bounded
    }
}

#[test]
fn a_reader_hands_what_it_cannot_read_to_a_side_output() {
    for mode in [RuntimeMode::Streaming, RuntimeMode::Batch] {
        for parallelism in [1, 2] {
            let env = StreamExecutionEnvironment::new();
            env.set_parallelism(parallelism).set_runtime_mode(mode);
            let bad = OutputTag::<String>::new("bad lines");
            let files = Numbers(
                vec![
                    vec!["1", "x", "2", "1500"],
                    vec!["y?", "3"],
                    vec!["", "2500"],
                ],
                bad.clone(),
            );
            let numbers = env.from_source(
                files,
                WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO),
                "numbers",
            );
            let good = numbers.collect();
            let rejected = numbers.side_output(&bad);
            let lines = rejected.collect();
            env.execute("side output of a source").unwrap();
            let what = format!("{mode:?} at parallelism {parallelism}");
            let mut good = good.take();
            good.sort_unstable();
            assert_eq!(good, [1, 2, 3, 1500, 2500], "{what}");
            let mut lines = lines.take();
            lines.sort();
            assert_eq!(lines, ["", "x", "y?"], "{what}");
        }
    }
}
