//! Bad input is refused with an error naming the item, line or value.

use quilt_pack::{
    Heuristic, ItemsFileError, PackError, PackOptions, SortOrder, pack, parse_extent, parse_items,
};

const BIN: [u32; 3] = [64, 64, 64];

#[test]
fn item_larger_than_the_bin_on_any_axis() {
    for axis in 0..3 {
        let mut big = [16, 16, 16];
        big[axis] = 65;
        let items = [[16, 16, 16], [20, 20, 20], big];
        let err = pack(&items, BIN, &PackOptions::default()).unwrap_err();
        assert_eq!(err.item(), Some(2));
        assert_eq!(
            err,
            PackError::ItemTooLarge {
                item: 2,
                extent: big,
                bin: BIN,
                axis,
                needed: 65,
                available: 64,
                rotation_allowed: false,
            }
        );
        let msg = err.to_string();
        assert!(msg.contains("item 2") && msg.contains("65"), "{msg}");
    }
    // Too large in every orientation, with rotation on.
    let err = pack(
        &[[65, 10, 10]],
        [64, 64, 64],
        &PackOptions {
            allow_rotation: true,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("any orientation"), "{err}");
}

#[test]
fn zero_sized_items_and_bins() {
    let err = pack(&[[16, 16, 16], [16, 0, 16]], BIN, &PackOptions::default()).unwrap_err();
    assert_eq!(
        err,
        PackError::EmptyItem {
            item: 1,
            extent: [16, 0, 16]
        }
    );
    assert!(err.to_string().contains("item 1"));
    let err = pack(&[[1, 1, 1]], [64, 0, 64], &PackOptions::default()).unwrap_err();
    assert_eq!(err, PackError::EmptyBin { bin: [64, 0, 64] });
    let huge = [u32::MAX; 3];
    let err = pack(&[[1, 1, 1]], huge, &PackOptions::default()).unwrap_err();
    assert_eq!(err, PackError::BinTooLarge { bin: huge });
}

#[test]
fn cluster_widths_out_of_range() {
    for delta_percent in [0, 101, u32::MAX] {
        let opts = PackOptions {
            sort: SortOrder::ClusteredHeightArea { delta_percent },
            ..Default::default()
        };
        assert_eq!(
            pack(&[[16, 16, 16]], BIN, &opts),
            Err(PackError::InvalidClusterWidth { delta_percent })
        );
        let opts = PackOptions {
            heuristic: Heuristic::CEpBfd,
            orders: SortOrder::paper_orders(&[10, delta_percent]),
            ..Default::default()
        };
        assert_eq!(
            pack(&[[16, 16, 16]], BIN, &opts),
            Err(PackError::InvalidClusterWidth { delta_percent })
        );
        let opts = PackOptions {
            sort: SortOrder::ClusteredDepthArea { delta_percent },
            ..Default::default()
        };
        assert!(pack(&[[16, 16, 16]], BIN, &opts).is_err());
    }
}

#[test]
fn malformed_item_files_name_the_line() {
    let cases: [(&str, usize); 7] = [
        ("w,h,d\n16,16,16\n16,16\n", 3),
        ("16,16,16\n16,16,16,16\n", 2),
        ("16,16,16\n\n# note\n16,x,16\n", 4),
        ("16,-4,16\n", 1),
        ("16,16,0\n", 1),
        ("16,16,1e3\n", 1),
        ("16;16;16\n", 1),
    ];
    for (text, line) in cases {
        let err: ItemsFileError = parse_items(text).unwrap_err();
        assert_eq!(err.line(), line, "{text:?}: {err}");
        assert!(err.to_string().contains(&format!("line {line}")), "{err}");
    }
}

#[test]
fn malformed_option_strings() {
    assert!(parse_extent("64,64").is_err());
    assert!(parse_extent("a,b,c").is_err());
    let err = "best-fit".parse::<Heuristic>().unwrap_err();
    assert!(err.to_string().contains("best-fit") && err.to_string().contains("ep-bfd"));
}
