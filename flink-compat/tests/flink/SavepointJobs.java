import java.io.File;

import org.apache.flink.configuration.Configuration;

/**
 * What the Flink programs that write savepoint goldens share (FlinkSavepoints.java,
 * FlinkMigration.java): the MiniCluster's configuration, moving a savepoint out of the
 * savepoint-xxxx directory Flink names, and removing a directory tree.
 */
final class SavepointJobs {
    private SavepointJobs() {}

    /**
     * BACKEND ("hashmap" or "rocksdb") with timers in RocksDB too, snapshot compression on or
     * off, checkpoints under OUT/NAME.chk; keyed state in files beside _metadata (relative
     * file handles), the small operator states inline (byte-stream handles).
     */
    static Configuration configuration(File out, String name, String backend, boolean compression) {
        Configuration conf = new Configuration();
        conf.setString("state.backend.type", backend);
        conf.setString("execution.checkpointing.snapshot-compression", String.valueOf(compression));
        conf.setString("execution.checkpointing.storage", "filesystem");
        conf.setString("execution.checkpointing.dir", new File(out, name + ".chk").toURI().toString());
        conf.setString("state.backend.rocksdb.timer-service.factory", "ROCKSDB");
        conf.setString("execution.checkpointing.data-inline-threshold", "1kb");
        return conf;
    }

    /** Moves the savepoint Flink wrote at PATH (a URI) to TARGET and removes its parent SCRATCH. */
    static void moveSavepoint(String path, File target, File scratch) throws Exception {
        File produced = new File(new java.net.URI(path));
        if (!produced.renameTo(target)) {
            throw new IllegalStateException("cannot move " + produced + " to " + target);
        }
        scratch.delete();
    }

    static void deleteTree(File f) {
        File[] children = f.listFiles();
        if (children != null) {
            for (File c : children) {
                deleteTree(c);
            }
        }
        f.delete();
    }
}
