package kafkalab.streams;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;

/** One ride as spark/producer.py writes it to `rides` (JSON, times as text). */
@JsonIgnoreProperties(ignoreUnknown = true)
public class Ride {
    @JsonProperty("vendor_id") public String vendorId;
    @JsonProperty("tpep_pickup_datetime") public String pickupDatetime;
    @JsonProperty("tpep_dropoff_datetime") public String dropoffDatetime;
    @JsonProperty("passenger_count") public int passengerCount;
    @JsonProperty("trip_distance") public double tripDistance;
    @JsonProperty("pu_location_id") public long puLocationId;
    @JsonProperty("do_location_id") public long doLocationId;
    @JsonProperty("total_amount") public double totalAmount;
}
