package rmqbench;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Thread-safe latency statistics: totals, a per-second window (TPS, average and max RT, as the
 * official benchmark prints), and a log-bucketed histogram (1% wide buckets) for p50/p99/p999.
 * Times are recorded in microseconds.
 */
final class Stats {
    private static final double BUCKET_GROWTH = 1.01; // 1% relative precision per bucket
    private static final int BUCKETS = 2200; // 1.01^2200 µs is far beyond any timeout

    private final AtomicLongArray histogram = new AtomicLongArray(BUCKETS);
    private final AtomicLong ok = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong rtSumUs = new AtomicLong();
    private final AtomicLong rtMaxUs = new AtomicLong();
    private final AtomicLong windowOk = new AtomicLong();
    private final AtomicLong windowRtSumUs = new AtomicLong();
    private final AtomicLong windowCalls = new AtomicLong();
    private final AtomicLong windowMaxUs = new AtomicLong();
    private volatile boolean recording = true;

    /** One successful call that carried {@code messages} messages and took {@code rtUs}. */
    void success(int messages, long rtUs) {
        windowOk.addAndGet(messages);
        windowRtSumUs.addAndGet(rtUs);
        windowCalls.incrementAndGet();
        windowMaxUs.accumulateAndGet(rtUs, Math::max);
        if (!recording) {
            return;
        }
        ok.addAndGet(messages);
        rtSumUs.addAndGet(rtUs);
        rtMaxUs.accumulateAndGet(rtUs, Math::max);
        int bucket = rtUs <= 1 ? 0 : (int) Math.min(BUCKETS - 1, Math.log(rtUs) / Math.log(BUCKET_GROWTH));
        histogram.incrementAndGet(bucket);
    }

    void failure(int messages) {
        if (recording) {
            failed.addAndGet(messages);
        }
    }

    /** Forget everything recorded so far (the end of the warm-up). */
    void reset() {
        ok.set(0);
        failed.set(0);
        rtSumUs.set(0);
        rtMaxUs.set(0);
        for (int i = 0; i < BUCKETS; i++) {
            histogram.set(i, 0);
        }
    }

    void stopRecording() {
        recording = false;
    }

    long ok() {
        return ok.get();
    }

    long failed() {
        return failed.get();
    }

    /** The per-second line: messages (or lookups) per second, average and max RT of the window. */
    String windowLine(double seconds) {
        long n = windowOk.getAndSet(0);
        long calls = windowCalls.getAndSet(0);
        long sum = windowRtSumUs.getAndSet(0);
        long max = windowMaxUs.getAndSet(0);
        return String.format(Locale.ROOT, "SECOND tps=%.0f avg_rt_ms=%.3f max_rt_ms=%.3f ok=%d failed=%d",
            n / seconds, calls == 0 ? 0.0 : sum / 1000.0 / calls, max / 1000.0, ok.get(), failed.get());
    }

    private double percentileMs(double q) {
        long total = 0;
        for (int i = 0; i < BUCKETS; i++) {
            total += histogram.get(i);
        }
        if (total == 0) {
            return 0.0;
        }
        long rank = (long) Math.ceil(q * total);
        long seen = 0;
        for (int i = 0; i < BUCKETS; i++) {
            seen += histogram.get(i);
            if (seen >= rank) {
                return Math.pow(BUCKET_GROWTH, i + 0.5) / 1000.0;
            }
        }
        return rtMaxUs.get() / 1000.0;
    }

    /** The final summary as one JSON object (calls = histogram entries, not messages). */
    String resultJson(double elapsedS, String extra) {
        long calls = 0;
        for (int i = 0; i < BUCKETS; i++) {
            calls += histogram.get(i);
        }
        return String.format(Locale.ROOT,
            "{\"ok\":%d,\"failed\":%d,\"calls\":%d,\"elapsed_s\":%.3f,\"tps\":%.1f,\"avg_rt_ms\":%.4f,"
                + "\"max_rt_ms\":%.3f,\"p50_ms\":%.4f,\"p99_ms\":%.4f,\"p999_ms\":%.4f%s}",
            ok.get(), failed.get(), calls, elapsedS, ok.get() / elapsedS,
            calls == 0 ? 0.0 : rtSumUs.get() / 1000.0 / calls, rtMaxUs.get() / 1000.0,
            percentileMs(0.50), percentileMs(0.99), percentileMs(0.999), extra);
    }
}
