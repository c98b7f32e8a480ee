package kafkalab.streams;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;

/** The page's CustomSerdes.getSerde(Ride.class): JSON values through Jackson. */
public final class JsonSerde {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private JsonSerde() {}

    public static <T> Serde<T> of(Class<T> type) {
        Serializer<T> serializer = (topic, value) -> {
            try {
                return value == null ? null : MAPPER.writeValueAsBytes(value);
            } catch (IOException e) {
                throw new SerializationException(e);
            }
        };
        Deserializer<T> deserializer = (topic, bytes) -> {
            try {
                return bytes == null ? null : MAPPER.readValue(bytes, type);
            } catch (IOException e) {
                throw new SerializationException(e);
            }
        };
        return Serdes.serdeFrom(serializer, deserializer);
    }
}
