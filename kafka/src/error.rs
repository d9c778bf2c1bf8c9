//! The connector's error type.

use std::fmt;

/// What went wrong in the Kafka connector.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The connector was configured wrongly (a missing option, a topic that does not exist).
    Config(String),
    /// A call of the Kafka client failed; `action` says which (with topic and partition
    /// where there is one).
    Client {
        /// What the connector was doing.
        action: String,
        /// The client's error.
        source: rdkafka::error::KafkaError,
    },
    /// A record read from Kafka could not be deserialized.
    Deserialize {
        /// The record's topic.
        topic: String,
        /// The record's partition.
        partition: i32,
        /// The record's offset.
        offset: i64,
        /// The deserializer's message.
        message: String,
    },
    /// A record could not be serialized for Kafka.
    Serialize {
        /// The topic it was for.
        topic: String,
        /// The serializer's message.
        message: String,
    },
    /// The broker did not accept a record the sink produced (reported by the delivery
    /// report; the sink fails at its next write or checkpoint).
    Delivery {
        /// The record's topic.
        topic: String,
        /// The client's error.
        source: rdkafka::error::KafkaError,
    },
}

/// The connector's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A failed client call, `action` naming what was done.
    pub(crate) fn client(
        action: impl Into<String>,
    ) -> impl FnOnce(rdkafka::error::KafkaError) -> Self {
        let action = action.into();
        move |source| Error::Client { action, source }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(message) => write!(f, "kafka connector configuration: {message}"),
            Error::Client { action, source } => write!(f, "kafka: {action}: {source}"),
            Error::Deserialize {
                topic,
                partition,
                offset,
                message,
            } => write!(
                f,
                "kafka record at topic `{topic}` partition {partition} offset {offset} does not deserialize: {message}"
            ),
            Error::Serialize { topic, message } => {
                write!(f, "a record for kafka topic `{topic}` does not serialize: {message}")
            }
            Error::Delivery { topic, source } => {
                write!(f, "kafka did not accept a record for topic `{topic}`: {source}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Client { source, .. } | Error::Delivery { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The runtime sees a connector error as its operator's failure (it names the operator).
impl From<Error> for typeinfo_runtime::Error {
    fn from(e: Error) -> Self {
        typeinfo_runtime::Error::function(e.to_string())
    }
}
