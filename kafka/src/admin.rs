//! Creating topics and adding partitions ([`KafkaAdmin`]), for jobs and tests that set up
//! their own topics.

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewPartitions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::ClientConfig;

use crate::error::{Error, Result};

/// A small administrative client.
///
/// # Examples
///
/// ```no_run
/// use typeinfo_kafka::KafkaAdmin;
///
/// # fn main() -> typeinfo_kafka::Result<()> {
/// let admin = KafkaAdmin::new("127.0.0.1:9092")?;
/// admin.create_topic("orders", 4)?;
/// # Ok(())
/// # }
/// ```
pub struct KafkaAdmin {
    client: AdminClient<DefaultClientContext>,
    options: AdminOptions,
}

impl std::fmt::Debug for KafkaAdmin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaAdmin").finish_non_exhaustive()
    }
}

impl KafkaAdmin {
    /// A client of the brokers `bootstrap_servers`.
    ///
    /// # Errors
    ///
    /// The client cannot be created (a malformed address).
    pub fn new(bootstrap_servers: &str) -> Result<Self> {
        let client = ClientConfig::new()
            .set("bootstrap.servers", bootstrap_servers)
            .create()
            .map_err(Error::client("create an admin client"))?;
        Ok(KafkaAdmin {
            client,
            options: AdminOptions::new().operation_timeout(Some(Duration::from_secs(30))),
        })
    }

    /// Creates `topic` with `partitions` partitions (replication factor 1); a topic that
    /// exists already is left as it is.
    ///
    /// # Errors
    ///
    /// The broker refused.
    pub fn create_topic(&self, topic: &str, partitions: i32) -> Result<()> {
        let new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
        let results = futures_executor::block_on(self.client.create_topics([&new], &self.options))
            .map_err(Error::client(format!("create topic `{topic}`")))?;
        for result in results {
            match result {
                Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((name, code)) => {
                    return Err(Error::Config(format!("creating topic `{name}`: {code}")))
                }
            }
        }
        Ok(())
    }

    /// Grows `topic` to `partitions` partitions in all.
    ///
    /// # Errors
    ///
    /// The broker refused.
    pub fn add_partitions(&self, topic: &str, partitions: usize) -> Result<()> {
        let new = NewPartitions::new(topic, partitions);
        let results =
            futures_executor::block_on(self.client.create_partitions([&new], &self.options))
                .map_err(Error::client(format!("add partitions to `{topic}`")))?;
        for result in results {
            if let Err((name, code)) = result {
                return Err(Error::Config(format!(
                    "adding partitions to `{name}`: {code}"
                )));
            }
        }
        Ok(())
    }
}
