"""What a data store says of the disk under it: Kafka's log directory that failed (the broker
hit an I/O error there and stopped serving it) and etcd's write-ahead log that fails its CRC
after a crash (the disk lost or tore its last writes).

Read from the stores' own messages (Kafka's LogDirFailureHandler, etcd's walpb package); the
rules sit after the kernel's storage rules, so a disk's own I/O error in the same input is
read first. A store's configuration errors (a path it may not write) are not read here.
"""

from __future__ import annotations

from diagnosis.explain.rules import Rule, host_storage, rule
from diagnosis.model import Action as A
from diagnosis.model import Severity as S

RULES: tuple[Rule, ...] = (
    rule(
        "storage.kafka_log_dir_failed",
        # (`Broker 0 stopped fetcher for partitions ... because they are in the failed log
        # directory /var/lib/kafka/data`, `Stopping serving logs in dir ...`)
        r"\bbecause they are in the failed log directory\b"
        r"|\bLogDirFailureHandler\b[^\n]*\bStopping serving (?:logs|replicas) in dir\b"
        r"|\bStopping serving (?:logs|replicas) in dir \S+[^\n]*\bLogDirFailureHandler\b"
        # the default layout, without the thread (`Stopping serving replicas in dir
        # /var/lib/kafka/data (kafka.server.ReplicaManager)`), and the broker's own end
        r"|\bStopping serving (?:logs|replicas) in dir \S+ \(kafka\.(?:server\.ReplicaManager"
        r"|log\.LogManager)\)|\bShutdown broker because all log dirs in \S+ have failed\b",
        ("failed log directory", "stopping serving", "all log dirs"),
        "A Kafka broker took a log directory offline after an I/O error on it (its "
        "LogDirFailureHandler): the disk or filesystem under that directory failed or filled; "
        "its partitions moved or went offline. Check the disk's kernel log.",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.55),
    ),
    rule(
        "storage.wal_crc_mismatch",
        # etcd's WAL decoder (`walpb: crc mismatch`, `wal: crc mismatch`)
        r"\b(?:walpb|wal): crc mismatch\b",
        ("crc mismatch",),
        "etcd's write-ahead log fails its checksum: the disk lost or tore the last writes (a "
        "hard reboot, a disk that acknowledged writes it had not made durable); the member "
        "must be restored from its peers or a snapshot.",
        host_storage(S.ERROR, A.HARDWARE_INSPECTION, 0.55),
    ),
)
