package io.github.rmqgateway.examples.spring;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** A small order service: {@link OrderSender} publishes orders, {@link OrderListener} receives them. */
@SpringBootApplication
public class OrdersApplication {
    /** The topic orders go to. */
    public static final String TOPIC = "spring-orders";

    public static void main(String[] args) {
        SpringApplication.run(OrdersApplication.class, args);
    }
}
