package rmqgrpc;

import org.apache.rocketmq.client.apis.ClientConfigurationBuilder;
import org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider;

/**
 * The credentials a scenario signs its requests with, from the system properties
 * {@code rmqgrpc.accessKey} and {@code rmqgrpc.secretKey} (compat_tests/test_grpc_auth_compat.py
 * sets them): with both given, the client signs every request (its {@code Signature} class puts the
 * {@code authorization} and {@code x-mq-date-time} headers); without them it signs nothing.
 */
final class Credentials {
    private Credentials() {
    }

    static ClientConfigurationBuilder apply(ClientConfigurationBuilder builder) {
        String accessKey = System.getProperty("rmqgrpc.accessKey");
        String secretKey = System.getProperty("rmqgrpc.secretKey");
        if (accessKey != null && secretKey != null) {
            builder.setCredentialProvider(new StaticSessionCredentialsProvider(accessKey, secretKey));
        }
        return builder;
    }
}
