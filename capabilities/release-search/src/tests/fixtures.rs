//! Real-shaped Torznab documents, as Jackett and Prowlarr write them.

/// Caps of an indexer with typed movie and tv search by id.
pub const FULL_CAPS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<caps>
  <server version="1.0" title="Jackett" />
  <limits max="100" default="100" />
  <searching>
    <search available="yes" supportedParams="q" />
    <tv-search available="yes" supportedParams="q,season,ep,imdbid,tvdbid" />
    <movie-search available="yes" supportedParams="q,imdbid,tmdbid" />
    <music-search available="no" supportedParams="q" />
  </searching>
  <categories>
    <category id="2000" name="Movies">
      <subcat id="2040" name="Movies/HD" />
      <subcat id="2045" name="Movies/UHD" />
    </category>
    <category id="5000" name="TV">
      <subcat id="5040" name="TV/HD" />
    </category>
  </categories>
</caps>"#;

/// Caps of an indexer that only knows text search.
pub const TEXT_ONLY_CAPS: &str = r#"<caps><server title="Tiny"/><searching>
  <search available="yes" supportedParams="q"/>
  <tv-search available="no" supportedParams="q"/>
  <movie-search available="no" supportedParams="q"/>
</searching><categories><category id="2000" name="Movies"/></categories></caps>"#;

/// A Jackett-style feed with three items: one with a hex infohash attribute,
/// one whose hash is only in a base32 magnet, one with no hash at all. The
/// prefix is deliberately not `torznab`: attributes are matched by URI.
pub const DUNE_FEED: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:tz="http://torznab.com/schemas/2015/feed">
  <channel>
    <atom:link href="http://127.0.0.1:9117/api" rel="self" type="application/rss+xml" />
    <title>AlphaTracker</title>
    <item>
      <title>Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.Atmos.DV.HDR.H.265-FLUX</title>
      <guid>https://alpha.example/torrents/1001</guid>
      <jackettindexer id="alpha">AlphaTracker</jackettindexer>
      <comments>https://alpha.example/torrents/1001</comments>
      <pubDate>Sat, 02 Mar 2024 10:00:00 +0100</pubDate>
      <size>21474836480</size>
      <link>https://jackett.example/dl/alpha/?jackett_apikey=HIDDEN&amp;path=1001</link>
      <category>2000</category>
      <enclosure url="https://jackett.example/dl/alpha/?jackett_apikey=HIDDEN&amp;path=1001" length="21474836480" type="application/x-bittorrent" />
      <tz:attr name="category" value="2000" />
      <tz:attr name="category" value="2045" />
      <tz:attr name="size" value="21474836480" />
      <tz:attr name="seeders" value="250" />
      <tz:attr name="peers" value="270" />
      <tz:attr name="infohash" value="DD8255ECDC7CA55FB0BBF81323D87062DB1F6D1C" />
      <tz:attr name="imdbid" value="tt15239678" />
      <tz:attr name="tmdbid" value="693134" />
      <tz:attr name="downloadvolumefactor" value="0" />
      <tz:attr name="uploadvolumefactor" value="1" />
    </item>
    <item>
      <title><![CDATA[Dune Part Two 2024 1080p BluRay x264 & more]]></title>
      <guid>magnet:?xt=urn:btih:MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43U&amp;dn=Dune</guid>
      <pubDate>Sun, 12 May 2024 08:15:00 +0000</pubDate>
      <link>magnet:?xt=urn:btih:MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43U&amp;dn=Dune</link>
      <tz:attr name="category" value="2040" />
      <tz:attr name="size" value="12884901888" />
      <tz:attr name="seeders" value="40" />
      <tz:attr name="leechers" value="5" />
      <tz:attr name="imdb" value="15239678" />
    </item>
    <item>
      <title>Dune Part Two 2024 CAM</title>
      <guid>https://alpha.example/torrents/1003</guid>
      <pubDate>not a date</pubDate>
      <enclosure url="https://jackett.example/dl/alpha/?path=1003" length="0" type="application/x-bittorrent" />
      <tz:attr name="category" value="2000" />
      <tz:attr name="seeders" value="3" />
    </item>
  </channel>
</rss>"#;

/// Hex of the base32 btih in the second item of [`DUNE_FEED`].
pub const SECOND_HASH: &str = "6162636465666768696a6b6c6d6e6f7071727374";

/// A second indexer listing the first item of [`DUNE_FEED`] again (same hash,
/// fewer seeders, as a base32 magnet) and one release of its own.
pub const DUNE_FEED_BETA: &str = r#"<rss version="2.0" xmlns:torznab="http://torznab.com/schemas/2015/feed"><channel><title>Beta</title>
  <item>
    <title>Dune.Part.Two.2024.2160p.WEB-DL.DDP5.1.Atmos.DV.HDR.H.265-FLUX</title>
    <guid>beta-77</guid>
    <pubDate>Sat, 02 Mar 2024 11:00:00 +0000</pubDate>
    <torznab:attr name="category" value="2045"/>
    <torznab:attr name="size" value="21474836480"/>
    <torznab:attr name="seeders" value="90"/>
    <torznab:attr name="peers" value="100"/>
    <torznab:attr name="magneturl" value="magnet:?xt=urn:btih:3WBFL3G4PSSV7MF37AJSHWDQMLNR63I4&amp;tr=udp%3A%2F%2Ftracker.beta.example%3A80"/>
  </item>
  <item>
    <title>Dune.Part.Two.2024.720p.WEB.H264-BETA</title>
    <guid>beta-78</guid>
    <torznab:attr name="category" value="2040"/>
    <torznab:attr name="seeders" value="12"/>
    <torznab:attr name="infohash" value="0123456789abcdef0123456789abcdef01234567"/>
  </item>
</channel></rss>"#;

/// Hex of the first item's hash in [`DUNE_FEED`].
pub const FIRST_HASH: &str = "dd8255ecdc7ca55fb0bbf81323d87062db1f6d1c";

/// An empty result.
pub const EMPTY_FEED: &str = r#"<rss version="2.0" xmlns:torznab="http://torznab.com/schemas/2015/feed"><channel><title>x</title></channel></rss>"#;
