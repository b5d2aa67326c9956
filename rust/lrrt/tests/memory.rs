// Buffers: typed round trips, copies that do not fit are errors that touch
// nothing, and drop frees (the device's memory statistics say so).
mod common;
use common::{device, Rng};
use lrrt::{DeviceBuffer, PinnedBuffer, Status};

#[test]
fn typed_round_trips_of_every_element() {
    let dev = device();
    let mut rng = Rng::new();
    let n = 1 + rng.below(5000) as usize;
    let host: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
    let buf = dev.buffer_from(&host).unwrap();
    assert_eq!(buf.len(), n);
    assert_eq!(buf.size_bytes(), n * 8);
    let mut back = vec![0xDEAD_BEEFu64; n];
    buf.copy_to_slice(&mut back).unwrap();
    assert_eq!(back, host);
    // Device to device, then a prefix back.
    let copy = DeviceBuffer::<u64>::new(dev, n + 3).unwrap();
    copy.copy_from_buffer(&buf, n).unwrap();
    let mut prefix = vec![0u64; n];
    copy.copy_to_slice(&mut prefix).unwrap();
    assert_eq!(prefix, host);
    // Through pinned memory.
    let mut pinned = PinnedBuffer::<u64>::new(dev, n).unwrap();
    assert!(pinned.as_slice().iter().all(|&v| v == 0));
    pinned.copy_from_buffer(&buf, n).unwrap();
    assert_eq!(pinned.as_slice(), &host[..]);
    let doubled: Vec<u64> = host.iter().map(|v| v.wrapping_mul(2)).collect();
    pinned.as_mut_slice().copy_from_slice(&doubled);
    buf.copy_from_pinned(&pinned).unwrap();
    assert_eq!(buf.to_vec().unwrap(), doubled);
}

#[test]
fn a_copy_that_does_not_fit_is_an_error_and_changes_nothing() {
    let dev = device();
    let mut rng = Rng::new();
    let host: Vec<f32> = rng.quarters(100, 1000);
    let buf = dev.buffer_from(&host).unwrap();
    let e = buf.copy_from_slice(&vec![1.0f32; 101]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.message().contains("has 100 elements but the copy needs 101"), "{}", e);
    let mut too_long = vec![f32::NAN; 101];
    let e = buf.copy_to_slice(&mut too_long).unwrap_err();
    assert!(e.message().contains("needs 101"), "{}", e);
    assert!(too_long.iter().all(|v| v.is_nan()), "a failed copy wrote the slice");
    let small = DeviceBuffer::<f32>::new(dev, 10).unwrap();
    assert!(small.copy_from_buffer(&buf, 11).is_err());
    assert!(buf.copy_from_buffer(&small, 11).is_err());
    let mut pinned = PinnedBuffer::<f32>::new(dev, 10).unwrap();
    assert!(pinned.copy_from_buffer(&buf, 11).is_err());
    assert_eq!(buf.to_vec().unwrap(), host);
    let e = DeviceBuffer::<u64>::new(dev, usize::MAX / 4).unwrap_err();
    assert!(e.message().contains("overflow"), "{}", e);
}

#[test]
fn drop_frees_device_and_pinned_memory() {
    let dev = device();
    let before = dev.memory_stats().unwrap();
    {
        let _a = DeviceBuffer::<u8>::new(dev, 3000).unwrap();
        let _p = PinnedBuffer::<u8>::new(dev, 5000).unwrap();
        let during = dev.memory_stats().unwrap();
        assert!(during.allocation_count >= before.allocation_count + 1);
        assert!(during.pinned_host_allocation_count >= before.pinned_host_allocation_count + 1);
    }
    let after = dev.memory_stats().unwrap();
    assert!(after.free_count >= before.free_count + 1, "{:?} -> {:?}", before, after);
    assert!(after.pinned_host_free_count >= before.pinned_host_free_count + 1);
}

#[test]
fn device_properties_and_backends() {
    let dev = device();
    let p = dev.properties().unwrap();
    assert_eq!(p.backend, common::backend());
    assert!(p.compute_units >= 1 && p.max_workgroup_size >= 1, "{:?}", p);
    assert_eq!(lrrt::Device::open(dev.index()).unwrap(), dev);
    assert!(lrrt::device_count().unwrap() > dev.index());
    let backends = lrrt::backends().unwrap();
    assert!(backends.iter().any(|b| b.name == p.backend && b.usable), "{:?}", backends);
    assert!(!lrrt::version().is_empty());
    let e = lrrt::Device::open(100_000).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{}", e);
    assert!(e.message().contains("out of range"), "{}", e);
}
